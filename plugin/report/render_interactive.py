"""The quality page's interactivity: inline CSS and one small hand-written script (issue 13, item 7).

The page stays one self-contained file that works offline: no CDN, no library, no
request of any kind. Everything here is progressive: with scripts disabled the page is the
same document, charts still show their numbers in their SVG ``<title>`` tooltips.

What the script does
--------------------
* **Sortable tables** — a click (or Enter) on a column header sorts the rows, again to
  reverse. Numbers (the leading number of a cell such as ``0.812 [0.7, 0.9]``) sort
  numerically, text naturally, and empty cells (``–``) always last. Matrices (tables whose
  body rows start with a header cell: the annotator-pair heatmaps, the confusion matrices)
  are left alone, their order being part of their reading.
* **Control filter** — the ``#control-filter`` selector shows one control's section, or all;
  following a link to a hidden section shows all again.
* **Chart tooltips** — the chart marks' ``<title>`` become an immediate tooltip that follows
  the pointer (the browser's own ``<title>`` tooltip comes late and cannot be styled).
"""
from __future__ import annotations

import html
from typing import Iterable

__all__ = ["PAGE_CSS", "PAGE_JS", "control_filter", "page_script"]

PAGE_CSS = """.toolbar{position:sticky;top:0;z-index:3;background:#fff;padding:.4em 0;border-bottom:1px solid #d0d7de}
th.sortable{cursor:pointer;user-select:none;white-space:nowrap}th.sortable:hover{background:#eaeef2}
th.sortable::after{content:" \\2195";color:#8c959f;font-size:.8em}
th[aria-sort=ascending]::after{content:" \\25B2";color:#1f2328}
th[aria-sort=descending]::after{content:" \\25BC";color:#1f2328}
figure{margin:.5em 1em .5em 0;display:inline-block;max-width:100%;vertical-align:top}
svg.chart{max-width:100%;height:auto;font-family:system-ui,sans-serif}
svg.chart text{font-size:11px;fill:#1f2328}svg.chart .axis{font-size:12px;fill:#57606a}
svg.chart .grid{stroke:#eaeef2;stroke-width:1}
svg.chart .hover{fill:#000;fill-opacity:0;pointer-events:all}svg.chart .hover:hover{fill-opacity:.07}
.tip{position:fixed;z-index:10;pointer-events:none;background:#1f2328;color:#fff;font-size:12px;
padding:4px 8px;border-radius:4px;white-space:pre-line;max-width:28em}"""

PAGE_JS = r"""(function () {
  "use strict";
  // --- sortable tables -------------------------------------------------------------
  function cellKey(cell) {
    var t = cell ? (cell.textContent || "").trim() : "";
    if (t === "" || t === "\u2013" || t === "-") return null;          // "–": no value
    var m = /^[-\u2212+]?(\d+(\.\d*)?|\.\d+)(e[-+]?\d+)?/i.exec(t);
    return m ? {num: parseFloat(m[0].replace("\u2212", "-")), text: t} : {num: null, text: t};
  }
  // header cells of one column each, with their column index (row/colspans laid out)
  function layout(table) {
    var rows = table.rows, nHead = 0;
    while (nHead < rows.length && rows[nHead].cells.length &&
           [].every.call(rows[nHead].cells, function (c) { return c.tagName === "TH"; })) nHead++;
    if (nHead === 0 || nHead === rows.length) return null;
    for (var r = nHead; r < rows.length; r++) {
      if (rows[r].cells.length && rows[r].cells[0].tagName === "TH") return null;   // a matrix
    }
    var taken = {}, cols = [];
    for (r = 0; r < nHead; r++) {
      var c = 0;
      for (var i = 0; i < rows[r].cells.length; i++) {
        var th = rows[r].cells[i], rs = th.rowSpan || 1, cs = th.colSpan || 1;
        while (taken[r + "," + c]) c++;
        for (var a = 0; a < rs; a++) for (var b = 0; b < cs; b++) taken[(r + a) + "," + (c + b)] = true;
        if (cs === 1 && (th.textContent || "").trim() !== "") cols.push({th: th, col: c});
        c += cs;
      }
    }
    return {nHead: nHead, cols: cols};
  }
  function sortTable(table, info, entry) {
    var dir = entry.th.getAttribute("aria-sort") === "ascending" ? "descending" : "ascending";
    info.cols.forEach(function (e) { e.th.removeAttribute("aria-sort"); });
    entry.th.setAttribute("aria-sort", dir);
    var rows = [].slice.call(table.rows, info.nHead);
    var items = rows.map(function (tr, i) { return {tr: tr, i: i, k: cellKey(tr.cells[entry.col])}; });
    var nNum = 0, nText = 0;
    items.forEach(function (x) { if (x.k) { if (x.k.num !== null) nNum++; else nText++; } });
    var numeric = nNum > 0 && nNum >= nText;     // a stray word in a number column sorts as empty
    function key(x) { return !x.k ? null : numeric ? x.k.num : x.k.text; }
    var sign = dir === "ascending" ? 1 : -1;
    items.sort(function (a, b) {
      var ka = key(a), kb = key(b);
      if (ka === null || kb === null) return ka === kb ? a.i - b.i : ka === null ? 1 : -1;   // empty last
      var c = numeric ? ka - kb : String(ka).localeCompare(String(kb), undefined, {numeric: true});
      return c ? sign * c : a.i - b.i;
    });
    items.forEach(function (x) { x.tr.parentNode.appendChild(x.tr); });
  }
  [].forEach.call(document.querySelectorAll("table"), function (table) {
    var info = layout(table);
    if (!info) return;
    table.classList.add("sortable");
    info.cols.forEach(function (entry) {
      var th = entry.th;
      th.classList.add("sortable");
      th.tabIndex = 0;
      th.title = "sort by this column (again: reverse)";
      th.addEventListener("click", function () { sortTable(table, info, entry); });
      th.addEventListener("keydown", function (ev) {
        if (ev.key === "Enter" || ev.key === " ") { ev.preventDefault(); sortTable(table, info, entry); }
      });
    });
  });
  // --- control filter --------------------------------------------------------------
  var select = document.getElementById("control-filter");
  function controlOf(section) {
    var h = section.querySelector("h2[id^='c-']");
    return h ? h.id.slice(2) : "";
  }
  function applyFilter() {
    var want = select ? select.value : "";
    [].forEach.call(document.querySelectorAll("section.control"), function (s) {
      s.hidden = want !== "" && controlOf(s) !== want;
    });
  }
  if (select) {
    select.addEventListener("change", applyFilter);
    applyFilter();
  }
  function revealTarget() {            // a link to a section the filter hides shows all again
    var id;
    try { id = decodeURIComponent(location.hash.slice(1)); } catch (e) { return; }   // a malformed %-escape
    var el = id && document.getElementById(id);
    var s = el && el.closest("section.control");
    if (s && s.hidden && select) { select.value = ""; applyFilter(); el.scrollIntoView(); }
  }
  window.addEventListener("hashchange", revealTarget);
  // --- chart tooltips --------------------------------------------------------------
  var tip = document.createElement("div");
  tip.className = "tip";
  tip.hidden = true;
  document.body.appendChild(tip);
  [].forEach.call(document.querySelectorAll("svg.chart title"), function (t) {
    var el = t.parentNode;
    el.setAttribute("data-tip", t.textContent);
    el.setAttribute("aria-label", t.textContent);
    el.removeChild(t);                  // else the browser's own tooltip shows too, later
  });
  document.addEventListener("mousemove", function (ev) {
    var el = ev.target && ev.target.closest ? ev.target.closest("[data-tip]") : null;
    if (!el) { tip.hidden = true; return; }
    tip.textContent = el.getAttribute("data-tip");
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    if (x + tip.offsetWidth > window.innerWidth - 4) x = ev.clientX - tip.offsetWidth - 14;
    if (y + tip.offsetHeight > window.innerHeight - 4) y = ev.clientY - tip.offsetHeight - 14;
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = Math.max(0, y) + "px";
  });
  document.addEventListener("mouseleave", function () { tip.hidden = true; });
})();"""


def control_filter(names: Iterable[str]) -> str:
    """The sticky bar with the control selector (``#control-filter``; "" = all controls)."""
    opts = "".join(f"<option value='{html.escape(n, quote=True)}'>{html.escape(n)}</option>" for n in names)
    return ("<div class=toolbar><label>Show control: <select id=control-filter>"
            f"<option value=''>all controls</option>{opts}</select></label> "
            "<small>click a column header to sort; hover a chart for its numbers</small></div>")


def page_script() -> str:
    """The page's one inline script element, placed last in ``<body>`` so the DOM exists."""
    return f"<script>{PAGE_JS}</script>"
