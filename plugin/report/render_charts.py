"""The quality page's charts, drawn as inline SVG (issue 13, item 7).

Inline SVG rather than embedded PNG: every mark carries its numbers in an SVG ``<title>``
(the browser's tooltip, and the page script's faster one), the text stays selectable and
sharp at any zoom, the page needs no plotting library at request time, and it still works
offline with scripts disabled. Every chart is ``<svg class=chart>`` with a ``viewBox`` so
that it scales to the page width.

* :func:`distribution_svg` — a control's observed (same task) vs expected (different
  tasks) distance densities and its threshold d*;
* :func:`annotator_svg` — per annotator σ and α with their bootstrap intervals.
"""
from __future__ import annotations

import html
import math
from typing import Callable, Sequence

from .model import ControlReport

__all__ = ["distribution_svg", "annotator_svg", "nice_ticks", "MAX_ANNOTATOR_BARS"]

#: Annotators drawn in a control's σ/α chart (the least agreeing first); the CSV holds them all.
MAX_ANNOTATOR_BARS = 40
_OBSERVED, _EXPECTED, _THRESHOLD = "#1f6feb", "#999999", "#d1242f"
_SIGMA, _ALPHA = "#1f6feb", "#8250df"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _n(v: float) -> str:
    """A coordinate: 1 decimal is below a pixel and keeps the page small."""
    return f"{v:.1f}"


def _ok(v: object) -> float | None:
    """``v`` as a finite float, else None: a NaN coordinate would be an SVG error in the console."""
    try:
        f = float(v)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None
    return f if math.isfinite(f) else None


def _g(v: float | None, digits: int = 3) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """About ``n`` round tick values (1, 2 or 5 × 10^k steps) covering ``[lo, hi]``.

    Parameters
    ----------
    lo, hi : float
        The axis range; ``hi <= lo`` gives the single tick ``lo``.
    n : int
        Wanted number of intervals.

    Returns
    -------
    list of float
        Increasing ticks within ``[lo, hi]`` (a rounding error's tolerance).
    """
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi <= lo:
        return [lo]
    raw = (hi - lo) / max(1, n)
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    start = math.ceil(lo / step - 1e-9) * step
    ticks, k = [], 0
    while start + k * step <= hi + step * 1e-9:
        ticks.append(round(start + k * step, 12) + 0.0)   # + 0.0: no "-0" label
        k += 1
    return ticks


def _tick_label(v: float, step: float) -> str:
    digits = max(0, -math.floor(math.log10(step))) if step > 0 else 0
    return f"{v:.{min(digits, 6)}f}"


def _x_axis(ticks: list[float], sx: Callable[[float], float], y0: float, y1: float, label: str, cx: float) -> str:
    """Vertical grid lines from ``y0`` to ``y1``, tick labels and the axis title (centred on ``cx``) below."""
    step = ticks[1] - ticks[0] if len(ticks) > 1 else 1.0
    out = []
    for t in ticks:
        x = sx(t)
        out.append(f"<line x1='{_n(x)}' x2='{_n(x)}' y1='{_n(y0)}' y2='{_n(y1)}' class=grid />"
                   f"<text x='{_n(x)}' y='{_n(y1 + 13)}' text-anchor=middle>{_tick_label(t, step)}</text>")
    if label:
        out.append(f"<text x='{_n(cx)}' y='{_n(y1 + 28)}' text-anchor=middle class=axis>{_e(label)}</text>")
    return "".join(out)


def _stairs(edges: Sequence[float], heights: Sequence[float], sx: Callable[[float], float],
            sy: Callable[[float], float], closed: bool) -> str:
    """SVG path of a step function (matplotlib's ``stairs``); ``closed``: down to 0 at both ends."""
    pts = [(sx(edges[0]), sy(0.0))] if closed else []
    for k, h in enumerate(heights):
        pts += [(sx(edges[k]), sy(h)), (sx(edges[k + 1]), sy(h))]
    if closed:
        pts.append((sx(edges[-1]), sy(0.0)))
    return "M" + " L".join(f"{_n(x)},{_n(y)}" for x, y in pts) + (" Z" if closed else "")


def distribution_svg(entry: ControlReport) -> str:
    """Observed (same task) and expected (different tasks) distance densities, with d*.

    Parameters
    ----------
    entry : ControlReport
        One control of a report; nothing is drawn without its ``histogram``.

    Returns
    -------
    str
        ``<figure>`` holding an ``<svg class='chart dist'>`` or "". Each bin has an invisible
        full-height hover target whose ``<title>`` gives the bin, both densities and the
        pairs in it.
    """
    hist = entry.histogram
    if hist is None or len(hist.edges) < 2 or len(hist.observed) != len(hist.edges) - 1:
        return ""
    raw = [_ok(x) for x in hist.edges]
    edges = [x for x in raw if x is not None]
    if len(edges) != len(raw):
        return ""
    obs = [_ok(x) or 0.0 for x in hist.observed]
    exp = [_ok(x) or 0.0 for x in hist.expected]
    widths = [max(edges[k + 1] - edges[k], 1e-12) for k in range(len(obs))]
    n_obs, n_exp = sum(obs), sum(exp)
    d_obs = [o / n_obs / w if n_obs > 0 else 0.0 for o, w in zip(obs, widths)]
    d_exp = [x / n_exp / w if n_exp > 0 else 0.0 for x, w in zip(exp, widths)]
    top = max(d_obs + d_exp + [1e-12]) * 1.08
    W, H, L, R, T, B = 600.0, 270.0, 52.0, 12.0, 30.0, 44.0
    x0, x1 = edges[0], edges[-1] if edges[-1] > edges[0] else edges[0] + 1.0
    sx = lambda v: L + (v - x0) / (x1 - x0) * (W - L - R)          # noqa: E731 - local scales
    sy = lambda v: H - B - v / top * (H - T - B)                    # noqa: E731
    yt = nice_ticks(0.0, top, 4)
    ystep = yt[1] - yt[0] if len(yt) > 1 else 1.0
    parts = [_x_axis(nice_ticks(x0, x1, 6), sx, T, H - B, f"distance ({entry.distance})", L + (W - L - R) / 2)]
    parts += [f"<line x1='{_n(L)}' x2='{_n(W - R)}' y1='{_n(sy(t))}' y2='{_n(sy(t))}' class=grid />"
              f"<text x='{_n(L - 5)}' y='{_n(sy(t) + 4)}' text-anchor=end>{_tick_label(t, ystep)}</text>" for t in yt]
    parts.append(f"<text transform='translate(13,{_n((T + H - B) / 2)}) rotate(-90)' text-anchor=middle "
                 "class=axis>density</text>")
    if n_exp > 0:
        parts.append(f"<path class=mark d='{_stairs(edges, d_exp, sx, sy, True)}' fill='{_EXPECTED}' "
                     f"fill-opacity=0.4 stroke='none'><title>expected (different tasks): "
                     f"{n_exp:.0f} pairs</title></path>")
    if n_obs > 0:
        parts.append(f"<path class=mark d='{_stairs(edges, d_obs, sx, sy, False)}' fill=none "
                     f"stroke='{_OBSERVED}' stroke-width=2><title>observed (same task): {n_obs:.0f} pairs"
                     "</title></path>")
    legend = [("observed (same task)", _OBSERVED, "line"), ("expected (different tasks)", _EXPECTED, "box")]
    if _ok(entry.threshold) is not None and x0 <= entry.threshold <= x1:
        x = sx(entry.threshold)
        parts.append(f"<line class=mark x1='{_n(x)}' x2='{_n(x)}' y1='{_n(T)}' y2='{_n(H - B)}' "
                     f"stroke='{_THRESHOLD}' stroke-width=1.5 stroke-dasharray='5 3'>"
                     f"<title>d* = {entry.threshold:.4g}: pairs closer than this agree</title></line>")
        legend.append((f"d* = {entry.threshold:.3g}", _THRESHOLD, "dash"))
    # hover targets last, so that they are on top: one per bin, the whole plot height
    for k in range(len(obs)):
        a, b = sx(edges[k]), sx(edges[k + 1])
        tip = (f"distance {edges[k]:.3g} – {edges[k + 1]:.3g}\n"
               f"observed: density {d_obs[k]:.3f}, {obs[k]:.0f} of {n_obs:.0f} same-task pairs\n"
               f"expected: density {d_exp[k]:.3f}, {exp[k]:.0f} of {n_exp:.0f} different-task pairs")
        parts.append(f"<rect class=hover x='{_n(a)}' y='{_n(T)}' width='{_n(max(b - a, 1.0))}' "
                     f"height='{_n(H - T - B)}'><title>{_e(tip)}</title></rect>")
    lx = L + 8
    for text, color, kind in legend:
        sw = (f"<rect x='{_n(lx)}' y='8' width='14' height='9' fill='{color}' fill-opacity=0.4 />" if kind == "box"
              else f"<line x1='{_n(lx)}' x2='{_n(lx + 14)}' y1='13' y2='13' stroke='{color}' stroke-width=2"
              + (" stroke-dasharray='4 2'" if kind == "dash" else "") + " />")
        parts.append(f"{sw}<text x='{_n(lx + 18)}' y='17'>{_e(text)}</text>")
        lx += 26 + 6.2 * len(text)
    return (f"<figure><svg class='chart dist' viewBox='0 0 {W:.0f} {H:.0f}' width='{W:.0f}' height='{H:.0f}' "
            f"role=img aria-label='{_e(f'distance distribution of {entry.distance}')}'>"
            + "".join(parts) + "</svg></figure>")


def annotator_svg(entry: ControlReport) -> str:
    """Per annotator σ and α of one control, bars with 95% bootstrap intervals.

    Parameters
    ----------
    entry : ControlReport
        One control; annotators without a σ are left out.

    Returns
    -------
    str
        ``<figure>`` holding an ``<svg class='chart annotators'>`` or "": two panels (σ, α),
        one row per annotator (the :data:`MAX_ANNOTATOR_BARS` lowest σ, lowest first),
        each bar's ``<title>`` giving the value, its interval and the pairs behind it.
    """
    anns = sorted(((k, v) for k, v in entry.annotators.items() if _ok(v.sigma) is not None),
                  key=lambda kv: (kv[1].sigma, kv[0]))[:MAX_ANNOTATOR_BARS]
    if not anns:
        return ""
    row, L, T, B, gap, R = 18.0, 150.0, 22.0, 24.0, 24.0, 14.0
    panel = 215.0
    W = L + 2 * panel + gap + R
    H = T + row * len(anns) + B
    parts = []
    for col, (key, color, sym) in enumerate((("sigma", _SIGMA, "σ"), ("alpha", _ALPHA, "α"))):
        vals, cis = [], []
        for _, v in anns:
            vals.append(_ok(getattr(v, key)))
            ci = getattr(v.ci, key) if v.ci is not None else (None, None)
            cis.append((_ok(ci[0]), _ok(ci[1])) if ci is not None and len(ci) == 2 else (None, None))
        seen = [x for x in vals if x is not None] + [c for ci in cis for c in ci if c is not None]
        lo, hi = min([0.0] + seen), max([1.0] + seen)      # σ lives in [0, 1]; α can go below 0
        left = L + col * (panel + gap)
        sx = lambda v, left=left, lo=lo, hi=hi: left + (v - lo) / (hi - lo) * panel   # noqa: E731
        parts.append(_x_axis(nice_ticks(lo, hi, 4), sx, T, H - B, "", left + panel / 2))   # titled on top
        parts.append(f"<line x1='{_n(sx(0.0))}' x2='{_n(sx(0.0))}' y1='{_n(T)}' y2='{_n(H - B)}' "
                     "stroke='#666' stroke-width=0.7 />")
        parts.append(f"<text x='{_n(left + panel / 2)}' y='14' text-anchor=middle class=axis>{sym}</text>")
        for r, ((a, v), val, ci) in enumerate(zip(anns, vals, cis)):
            y = T + r * row
            name = str(v.name or a)
            tip = f"{name}: {sym} {_g(val)}"
            if ci[0] is not None and ci[1] is not None:
                tip += f" [{ci[0]:.3f}, {ci[1]:.3f}]"
            tip += f"\n{v.n_pairs} pairs on {v.n_items} tasks"
            if val is not None:
                a_, b_ = sorted((sx(0.0), sx(val)))
                parts.append(f"<rect class=mark x='{_n(a_)}' y='{_n(y + 3)}' width='{_n(max(b_ - a_, 0.8))}' "
                             f"height='{_n(row - 6)}' fill='{color}'><title>{_e(tip)}</title></rect>")
            if ci[0] is not None and ci[1] is not None:
                c0, c1, ym = sx(ci[0]), sx(ci[1]), y + row / 2
                parts.append(f"<path d='M{_n(c0)},{_n(ym)} H{_n(c1)} M{_n(c0)},{_n(ym - 3)} V{_n(ym + 3)} "
                             f"M{_n(c1)},{_n(ym - 3)} V{_n(ym + 3)}' stroke='#333' fill=none />")
            # the whole row is a hover target, so that a short bar is as easy to hover as a long one
            parts.append(f"<rect class=hover x='{_n(left)}' y='{_n(y)}' width='{_n(panel)}' height='{_n(row)}'>"
                         f"<title>{_e(tip)}</title></rect>")
    for r, (a, v) in enumerate(anns):
        parts.append(f"<text x='{_n(L - 6)}' y='{_n(T + r * row + row / 2 + 4)}' text-anchor=end>"
                     f"{_e(str(v.name or a)[:24])}</text>")
    return (f"<figure><svg class='chart annotators' viewBox='0 0 {W:.0f} {H:.0f}' width='{W:.0f}' "
            f"height='{H:.0f}' role=img aria-label='σ and α per annotator'>" + "".join(parts) + "</svg></figure>")
