"""A baseline made in a spawned worker process (plugin/live/baseline_worker.py) is the
baseline made in the service's process, what the worker raises is raised as it was, and a
worker that dies is reported, not waited for."""
from __future__ import annotations

import gc
import multiprocessing as mp
import os
import pickle
import signal
import threading
import time
import types

import pytest

from ls_agreement.demo.data import DEMO_CONFIG
from ls_agreement.plugin.errors import BadInput
from ls_agreement.plugin.live import baseline_worker
from ls_agreement.plugin.live.baseline import make_baseline
from ls_agreement.plugin.live.baseline_worker import BaselineWorkerDied, make_baseline_in_worker
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.report.model import to_jsonable
from ls_agreement.plugin.settings import ReportSettings
from tests.plugin.test_live_units import demo_tasks


def _mirror(n: int, seed: int) -> ProjectMirror:
    mirror = ProjectMirror()
    mirror.fill(demo_tasks(n, seed=seed))
    return mirror


def test_the_worker_makes_the_same_baseline(monkeypatch: pytest.MonkeyPatch) -> None:
    """Byte for byte the same report, frozen quantities and quality; blocks of a few entries,
    so that the report comes back in many messages."""
    monkeypatch.setattr(baseline_worker, "_TASKS_PER_BLOCK", 7)   # the worker's own blocks stay its defaults
    mirror = _mirror(40, seed=3)
    settings = ReportSettings(bootstrap=50, seed=1)
    names = {"10": "ann10@example.com"}
    here = make_baseline(DEMO_CONFIG, mirror, settings, reason="test", annotator_names=names)
    there = make_baseline_in_worker(DEMO_CONFIG, mirror, settings, reason="test", annotator_names=names)
    there.made_at = here.made_at            # when each was made: the one thing that differs
    there.report.baseline = here.report.baseline
    assert to_jsonable(there.report) == to_jsonable(here.report)
    assert list(there.report.tasks) == list(here.report.tasks)
    assert {n: list(c.items) for n, c in there.report.controls.items()} == \
        {n: list(c.items) for n, c in here.report.controls.items()}
    assert there.controls == here.controls and there.quality == here.quality
    assert there.reason == "test" and there.config_xml == DEMO_CONFIG


def test_what_the_worker_raises_is_raised_here() -> None:
    mirror = ProjectMirror()
    mirror.fill([{"id": 1, "data": {"text": "x"},
                  "annotations": [{"id": 1, "completed_by": 1, "result": [{"from_name": "nowhere", "to_name": "x",
                                                                           "type": "choices", "value": {"choices": ["a"]}}]}]}])
    with pytest.raises(BadInput) as raised:
        make_baseline_in_worker("<View><Text name='t' value='$text'/></View>", mirror, ReportSettings(strict=True))
    with pytest.raises(BadInput) as here:
        make_baseline("<View><Text name='t' value='$text'/></View>", mirror, ReportSettings(strict=True))
    assert str(raised.value) == str(here.value)


def test_a_worker_that_dies_is_reported() -> None:
    """Killed while it computes (as the kernel kills a process out of memory): the caller
    gets BaselineWorkerDied with the exit code, and no worker is left behind."""
    mirror = _mirror(300, seed=4)
    killed: list[int] = []

    def kill_the_worker() -> None:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not killed:
            for child in mp.active_children():
                if child.name == "ls-agreement-baseline" and child.pid:
                    time.sleep(1.0)              # past its start, into the computation
                    os.kill(child.pid, signal.SIGKILL)
                    killed.append(child.pid)
                    return
            time.sleep(0.05)

    killer = threading.Thread(target=kill_the_worker)
    killer.start()
    with pytest.raises(BaselineWorkerDied, match="exit code -9"):
        make_baseline_in_worker(DEMO_CONFIG, mirror, ReportSettings(bootstrap=200))
    killer.join()
    assert killed
    assert not [c for c in mp.active_children() if c.name == "ls-agreement-baseline"]


def test_a_failure_while_the_tasks_stream_is_raised_here(monkeypatch: pytest.MonkeyPatch) -> None:
    """The worker fails on the third of 1,200 tasks while the service is still sending them
    (more than the pipe holds): the service stops sending and raises the worker's error, not
    a dead worker."""
    monkeypatch.setattr(baseline_worker, "_TASKS_PER_BLOCK", 20)
    sent: list[int] = []
    blocks = baseline_worker.chunks

    def counted(items, size):  # type: ignore[no-untyped-def]
        for block in blocks(items, size):
            sent.append(len(block))
            yield block

    monkeypatch.setattr(baseline_worker, "chunks", counted)
    tasks = demo_tasks(1200, seed=5)
    tasks[2]["annotations"][0]["result"].append({"from_name": "nowhere", "to_name": "text", "type": "choices",
                                                 "value": {"choices": ["a"]}})
    mirror = ProjectMirror()
    mirror.fill(tasks)
    with pytest.raises(BadInput) as raised:
        make_baseline_in_worker(DEMO_CONFIG, mirror, ReportSettings(strict=True))
    assert sum(sent) < len(tasks), "the stream was cut short"
    with pytest.raises(BadInput) as here:
        make_baseline(DEMO_CONFIG, mirror, ReportSettings(strict=True))
    assert str(raised.value) == str(here.value) and "nowhere" in str(here.value)


def test_a_worker_ends_with_the_service_that_started_it(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A service killed while its worker computes (no exit handler runs): the worker ends
    within seconds instead of computing on for nobody (without the watch it computed the
    whole report first)."""
    import subprocess
    import sys
    import textwrap

    script = tmp_path / "service.py"
    script.write_text(textwrap.dedent("""
        import sys
        from ls_agreement.demo.data import DEMO_CONFIG
        from ls_agreement.plugin.live import baseline_worker
        from ls_agreement.plugin.live.mirror import ProjectMirror
        from ls_agreement.plugin.settings import ReportSettings
        from tests.plugin.test_live_units import demo_tasks

        send = baseline_worker._send_tasks

        def told(conn, mirror):
            send(conn, mirror)
            print("sent", flush=True)      # the worker has every task: it computes now

        if __name__ == "__main__":
            baseline_worker._send_tasks = told
            mirror = ProjectMirror()
            mirror.fill(demo_tasks(1500, seed=6))
            baseline_worker.make_baseline_in_worker(DEMO_CONFIG, mirror, ReportSettings(bootstrap=4000))
    """))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    service = subprocess.Popen([sys.executable, str(script)], cwd=os.getcwd(), env=env, stdout=subprocess.PIPE, text=True)
    try:
        assert service.stdout is not None and service.stdout.readline().strip() == "sent"
        workers = subprocess.run(["pgrep", "-P", str(service.pid), "-f", "spawn_main"], capture_output=True,
                                 text=True).stdout.split()
        assert len(workers) == 1
        worker = int(workers[0])
        time.sleep(1.0)
    finally:
        service.kill()
        service.wait()

    def alive() -> bool:
        try:
            return b"spawn_main" in open(f"/proc/{worker}/cmdline", "rb").read()
        except OSError:
            return False

    deadline = time.monotonic() + 5 * baseline_worker._WATCH_SECONDS
    while time.monotonic() < deadline and alive():
        time.sleep(0.1)
    still = alive()
    if still:
        os.kill(worker, signal.SIGKILL)
    assert not still, "the worker computed on after its service was killed"


def test_where_no_worker_can_start_the_baseline_is_made_here(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A service run from a script on standard input: a spawned interpreter cannot re-import
    its ``__main__``, so no worker starts. Without the fallback that is a failure named for
    what it is; with it (as serve calls it) the baseline is made in the service, with a warning."""
    import subprocess
    import sys

    script = """
import warnings
from ls_agreement.demo.data import DEMO_CONFIG
from ls_agreement.plugin.live.baseline_worker import BaselineWorkerDidNotStart, make_baseline_in_worker
from ls_agreement.plugin.live.mirror import ProjectMirror
from ls_agreement.plugin.settings import ReportSettings
from tests.plugin.test_live_units import demo_tasks

mirror = ProjectMirror()
mirror.fill(demo_tasks(30, seed=7))
try:
    make_baseline_in_worker(DEMO_CONFIG, mirror, ReportSettings(bootstrap=0))
    print("made in a worker")
except BaselineWorkerDidNotStart:
    print("did not start")
with warnings.catch_warnings(record=True) as seen:
    warnings.simplefilter("always")
    base = make_baseline_in_worker(DEMO_CONFIG, mirror, ReportSettings(bootstrap=0), fallback=True)
print(len(base.report.tasks), [str(w.message) for w in seen if "made in this process" in str(w.message)])
"""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([os.getcwd(), os.environ.get("PYTHONPATH", "")]))
    run = subprocess.run([sys.executable, "-"], input=script, capture_output=True, text=True, cwd=os.getcwd(),
                         env=env, timeout=300)
    lines = run.stdout.strip().splitlines()
    assert lines[0] == "did not start", run.stdout + run.stderr
    assert lines[1].startswith("30 [") and "exit code" in lines[1]


def test_a_received_baseline_is_out_of_the_collectors_reach(monkeypatch: pytest.MonkeyPatch) -> None:
    """The baseline (its head and every block) is unpickled with the collector off, so no
    full pass over the service's heap runs while events wait, and it is frozen once it is
    in (it holds no reference cycles, which frozen would never be freed); the collector is
    on while the worker computes (its requests for the tasks), and after. A failed receipt
    freezes nothing."""
    monkeypatch.setattr(baseline_worker, "_TASKS_PER_BLOCK", 7)
    loaded: list[tuple[str, bool]] = []
    sending: list[bool] = []

    def loads(raw):  # type: ignore[no-untyped-def]
        msg = pickle.loads(raw)
        loaded.append((msg[0], gc.isenabled()))
        return msg

    real_send = baseline_worker._send_tasks

    def send_tasks(conn, mirror):  # type: ignore[no-untyped-def]
        sending.append(gc.isenabled())
        real_send(conn, mirror)

    monkeypatch.setattr(baseline_worker, "pickle", types.SimpleNamespace(loads=loads, dumps=pickle.dumps))
    monkeypatch.setattr(baseline_worker, "_send_tasks", send_tasks)
    gc.unfreeze()
    try:
        base = make_baseline_in_worker(DEMO_CONFIG, _mirror(30, seed=2), ReportSettings(bootstrap=0))
        assert gc.isenabled() and sending and all(sending)
        kinds = [k for k, _ in loaded]
        assert kinds[0] == "send" and "baseline" in kinds and "entries" in kinds and kinds[-1] == "end"
        assert not any(on for k, on in loaded if k != "send")     # head and blocks: collector off
        entry = next(iter(base.report.tasks.values()))
        assert gc.get_freeze_count() > 0 and gc.is_tracked(entry)
        assert not any(entry is o for o in gc.get_objects())   # frozen: in none of its generations
        # frozen objects in reference cycles would never be freed: the baseline holds none
        gc.unfreeze()
        gc.collect()
        del base, entry
        assert gc.collect() == 0
        with pytest.raises(BadInput):
            make_baseline_in_worker("<View><Text name='t' value='$text'/></View>", _bad_mirror(),
                                    ReportSettings(strict=True))
        assert gc.isenabled() and gc.get_freeze_count() == 0
    finally:
        gc.unfreeze()


def _bad_mirror() -> ProjectMirror:
    mirror = ProjectMirror()
    mirror.fill([{"id": 1, "data": {"text": "x"},
                  "annotations": [{"id": 1, "completed_by": 1, "result": [{"from_name": "nowhere", "to_name": "x",
                                                                           "type": "choices", "value": {"choices": ["a"]}}]}]}])
    return mirror
