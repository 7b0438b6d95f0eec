"""The quality page's annotator-pair cells open the pair's shared tasks in a real Label
Studio (issue 13, item 1: "a heatmap whose cells link to a Data Manager view of the tasks
both annotated").

Label Studio 1.23's Data Manager reads no filters from its URL (a ``?filters=`` link shows
every task: checked while building this), so a cell links to serve's
``/projects/<id>/pair``, which saves the pair's filter as a view and redirects to its tab.
Checked here against the real server: the redirect, the tasks the view holds (against the
imported annotations), no duplicate views and at most ``MAX_PAIR_VIEWS`` of them, the
errors, and in headless Chromium signed in to Label Studio: following a cell's link from
the served page lands on the Data Manager showing exactly those tasks (screenshot written
for a person to look at).
"""
from __future__ import annotations

import itertools
import os
import re
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import requests

from ls_agreement.plugin.client import Connection
from ls_agreement.plugin.views import MAX_PAIR_VIEWS, PAIR_PREFIX

from .browser import ARTIFACTS_ENV, DevTools, Page, find_chromium
from .test_serve import CONFIG, SENT, connect, result, serve_args, wait_for

ROOT = Path(__file__).resolve().parents[2]
N_TASKS = 24


def _tasks(users: list[int]) -> tuple[list[dict[str, Any]], list[frozenset[int]]]:
    """Task i is annotated by every user but ``users[i % 4]``: each pair shares 12 tasks."""
    tasks, who = [], []
    for i in range(N_TASKS):
        by = [u for k, u in enumerate(users[:4]) if k != i % 4]
        tasks.append({"data": {"text": f"pair text {i}"}, "annotations": [
            {"completed_by": u, "result": result(SENT[(i + (k == 2 and i % 3 == 0)) % 3], 1 + i % 5)}
            for k, u in enumerate(by)]})
        who.append(frozenset(by))
    return tasks, who


@pytest.fixture
def served(ls_server: Any, annotators: list[dict], make_project: Callable,
           tmp_path: Path) -> Iterator[tuple[Any, int, list[int], list[frozenset[int]]]]:
    from ls_agreement.plugin.commands import serve as serve_cmd

    users = [a["id"] for a in annotators[:4]]
    tasks, who = _tasks(users)
    pid = make_project(CONFIG, tasks, title="pair links")
    svc = serve_cmd.make_service(serve_args(ls_server.url, ls_server.token, tmp_path)).start()
    try:
        assert connect(ls_server, pid, f"{svc.address}/webhook", tmp_path) == 0
        wait_for(lambda: requests.get(f"{svc.address}/projects/{pid}/report.json",
                                      timeout=10).status_code == 200, 120, "the first report")
        yield svc, pid, users, who
    finally:
        svc.stop(grace=10)


def _ids_by_text(ls_client: Any, pid: int) -> dict[str, int]:
    return {t.data["text"]: int(t.id) for t in ls_client.tasks.list(project=pid)}


def _pair_views(conn: Connection, pid: int) -> list[dict[str, Any]]:
    return [v for v in conn.list_views(pid)
            if str((v.get("data") or {}).get("ls_agreement", {}).get("view", "")).startswith(PAIR_PREFIX)]


def test_cells_open_the_pairs_shared_tasks(served: Any, ls_server: Any, ls_client: Any) -> None:
    svc, pid, users, who = served
    page = requests.get(f"{svc.address}/projects/{pid}", timeout=60)
    assert page.status_code == 200
    links = sorted(set(re.findall(rf"href='(/projects/{pid}/pair\?a=\d+&amp;b=\d+)'", page.text)))
    assert links, "the served page's heatmap cells carry no link"
    by_text = _ids_by_text(ls_client, pid)
    shared = {frozenset(p): {by_text[f"pair text {i}"] for i, w in enumerate(who) if set(p) <= w}
              for p in itertools.combinations(users, 2)}
    conn = Connection(ls_server.url, ls_server.token)
    try:
        seen: dict[frozenset[int], int] = {}
        for href in links:
            href = href.replace("&amp;", "&")
            r = requests.get(svc.address + href, allow_redirects=False, timeout=30)
            assert r.status_code == 303, r.text
            m = re.fullmatch(rf"{re.escape(ls_server.url)}/projects/{pid}/data\?tab=(\d+)",
                             r.headers["Location"])
            assert m, r.headers["Location"]
            a, b = map(int, re.findall(r"[ab]=(\d+)", href))
            pair = frozenset((a, b))
            assert pair in shared, f"a cell links annotators {a}, {b} who are not a pair here"
            view = int(m.group(1))
            assert set(conn.view_task_ids(pid, view)) == shared[pair]
            seen[pair] = view
            assert len(_pair_views(conn, pid)) <= MAX_PAIR_VIEWS
        assert len(seen) == len(shared) == 6      # the project heatmap links every pair
        # the same pair again: its view is reused, never duplicated
        a, b = sorted(next(iter(seen)))
        for _ in range(2):
            r = requests.get(f"{svc.address}/projects/{pid}/pair", params={"a": b, "b": a},
                             allow_redirects=False, timeout=30)
            assert r.status_code == 303
        views = _pair_views(conn, pid)
        assert len(views) == MAX_PAIR_VIEWS
        assert sum(v["data"]["ls_agreement"]["view"] == f"{PAIR_PREFIX}{a}:{b}" for v in views) == 1
        # the plugin's own tabs survive the pruning of pair views
        keys = {str((v.get("data") or {}).get("ls_agreement", {}).get("view"))
                for v in conn.list_views(pid)}
        assert {"agreement", "low"} <= keys
    finally:
        conn.close()
    bad = {"a": users[0], "b": users[0]}
    assert requests.get(f"{svc.address}/projects/{pid}/pair", params=bad, timeout=10).status_code == 400
    assert requests.get(f"{svc.address}/projects/{pid}/pair", params={"a": "x", "b": 1},
                        timeout=10).status_code == 400
    assert requests.get(f"{svc.address}/projects/{pid + 999}/pair",
                        params={"a": users[0], "b": users[1]}, timeout=10).status_code == 404


def _login_cookies(server: Any) -> dict[str, str]:
    """A Label Studio browser session (Django's login form), as cookies."""
    s = requests.Session()
    s.get(f"{server.url}/user/login/", timeout=30)
    r = s.post(f"{server.url}/user/login/", timeout=30,
               data={"email": server.email, "password": server.password,
                     "csrfmiddlewaretoken": s.cookies.get("csrftoken", "")},
               headers={"Referer": f"{server.url}/user/login/"})
    assert r.status_code == 200 and "sessionid" in s.cookies, "could not sign in to Label Studio"
    return dict(s.cookies)


def test_a_click_in_chromium_lands_on_those_tasks(served: Any, ls_server: Any, ls_client: Any,
                                                  tmp_path: Path) -> None:
    exe = find_chromium()
    if exe is None:
        pytest.skip("no Chromium found (bash run.sh test installs it as root)")
    svc, pid, users, who = served
    by_text = _ids_by_text(ls_client, pid)
    tools = DevTools(exe, tmp_path / "profile")
    try:
        tab = Page(tools)
        for name, value in _login_cookies(ls_server).items():
            tab.send("Network.setCookie", {"name": name, "value": value, "url": ls_server.url})
        tab.open(f"{svc.address}/projects/{pid}")
        # the first link of the project heatmap, clicked as a person would
        href = tab.js("document.querySelector('table.heat a').getAttribute('href')")
        a, b = map(int, re.findall(r"[ab]=(\d+)", href))
        want = {by_text[f"pair text {i}"] for i, w in enumerate(who) if {a, b} <= w}
        tab.click("document.querySelector('table.heat a')")
        deadline = time.monotonic() + 60
        rows, url = -1, ""
        while time.monotonic() < deadline:
            url = tab.js("location.href") or ""
            if "/data?tab=" in url:
                rows = tab.js("document.querySelectorAll('[class*=row-wrapper]').length")
                if rows == len(want):
                    break
            time.sleep(0.5)
        out = Path(os.environ.get(ARTIFACTS_ENV) or ROOT / "tests" / "artifacts") / "pair_links"
        out.mkdir(parents=True, exist_ok=True)
        tab.screenshot(out / "data_manager_pair.png", full=False)
        assert url.startswith(f"{ls_server.url}/projects/{pid}/data?tab="), url
        assert rows == len(want), f"the Data Manager shows {rows} rows, the pair shares {len(want)} tasks"
        shown = tab.js("document.body.innerText")
        listed = {i for i in range(N_TASKS) if re.search(rf"\bpair text {i}\b", shown)}
        assert listed == {i for i, w in enumerate(who) if {a, b} <= w}
    finally:
        tools.close()
