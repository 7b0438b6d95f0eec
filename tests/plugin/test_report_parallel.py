"""Controls measured in worker processes (plugin/report/parallel.py, issue 24.1): the same
report as one process, the work really done elsewhere, and a failing worker not fatal.

The reports fork only from a process with no other thread (forking a threaded process can
deadlock the child). Inside a full test run, session fixtures keep threads alive (the
servers' log readers), so the fork path is checked in a fresh interpreter of its own."""
from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import textwrap

import pytest

from ls_agreement.plugin.report.parallel import measure_controls

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="no fork here: controls always run in-process")

_PRELUDE = """
import os
import pandas as pd
from ls_agreement.adapters.control import ControlData
from ls_agreement.plugin.report.parallel import _fork_ok, measure_controls
assert _fork_ok(), "a fresh interpreter may fork"

def controls(n):
    return {f"c{k}": ControlData(name=f"c{k}", tag="choices", kind="labels", object_name="x", options=None,
                                 candidates=["nominal"], default_distance="nominal",
                                 table=pd.DataFrame({"item": [1] * (k + 1), "annotator": ["a"] * (k + 1),
                                                     "value": ["v"] * (k + 1)}))
            for k in range(n)}
"""


def _in_fresh_process(code: str) -> None:
    """Run ``code`` (after :data:`_PRELUDE`) in a new interpreter; its assertions are the test's."""
    done = subprocess.run([sys.executable, "-c", _PRELUDE + textwrap.dedent(code) + "\nprint('ok')\n"],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0 and done.stdout.strip().endswith("ok"), done.stdout + done.stderr


def test_workers_give_the_very_same_report() -> None:
    _in_fresh_process("""
        from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
        from ls_agreement.plugin.report.build import build_report
        from ls_agreement.plugin.settings import ReportSettings
        users = {a.email: 10 + k for k, a in enumerate(ANNOTATORS)}
        tasks = [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=50, seed=5).tasks, start=1)]
        settings = ReportSettings(bootstrap=60, seed=11)
        one = build_report(DEMO_CONFIG, tasks, settings)
        many = build_report(DEMO_CONFIG, tasks, settings, workers=3)
        assert len(one.controls) == 5
        assert many.to_json(indent=1) == one.to_json(indent=1)
    """)


def test_each_control_runs_in_its_own_worker_and_comes_back_in_order() -> None:
    _in_fresh_process("""
        cs = controls(4)
        out = measure_controls(cs, lambda c: (c.name, len(c.table), os.getpid()), workers=2)
        assert list(out) == list(cs)
        assert [(v[0], v[1]) for v in out.values()] == [(f"c{k}", k + 1) for k in range(4)]
        pids = {v[2] for v in out.values()}
        # a fresh process per control, never this one
        assert os.getpid() not in pids and len(pids) == 4, pids
        import gc
        assert gc.get_freeze_count() == 0      # frozen only while the workers ran
        frozen = measure_controls(cs, lambda c: gc.get_freeze_count() > 0, workers=2)
        assert all(frozen.values()) and gc.get_freeze_count() == 0
    """)


def test_a_result_that_cannot_travel_back_is_measured_here() -> None:
    _in_fresh_process("""
        # a lambda does not pickle: the worker's result is lost, the control is measured here
        out = measure_controls(controls(3), lambda c: (lambda: c.name), workers=2)
        assert [f() for f in out.values()] == ["c0", "c1", "c2"]
    """)


def test_released_controls_leave_the_mapping_once_measured() -> None:
    _in_fresh_process("""
        import weakref
        cs = controls(4)
        refs = [weakref.ref(c) for c in cs.values()]
        kept = measure_controls(cs, lambda c: (c.name, len(c.table)), workers=2)
        assert len(cs) == 4                     # without release, the caller's controls stay
        out = measure_controls(cs, lambda c: (c.name, len(c.table)), workers=2, release=True)
        assert out == kept and list(out) == [f"c{k}" for k in range(4)]
        assert cs == {}
        import gc
        gc.collect()
        assert all(r() is None for r in refs)    # nothing here holds them any more
        # a worker whose result cannot travel back: its control stays until measured here
        cs = controls(3)
        out = measure_controls(cs, lambda c: (lambda: c.name), workers=2, release=True)
        assert [f() for f in out.values()] == ["c0", "c1", "c2"] and cs == {}
    """)


def test_workers_start_only_where_their_expected_memory_fits_the_budget() -> None:
    _in_fresh_process("""
        import time
        from ls_agreement.plugin.report.budget import held_bytes

        def timed(c):
            start = time.monotonic()
            time.sleep(0.4)
            return c.name, start, time.monotonic()

        def most_at_once(out):
            edges = sorted([(s, 1) for _, s, _ in out.values()] + [(e, -1) for _, _, e in out.values()],
                           key=lambda t: (t[0], t[1]))
            now = top = 0
            for _, step in edges:
                now += step
                top = max(top, now)
            return top

        unit = 200_000_000
        cs = controls(4)
        even = {n: unit for n in cs}
        # room for one worker's estimate beside this process: one at a time, all four measured
        out = measure_controls(cs, timed, workers=4, costs=even, budget=held_bytes() + unit + unit // 2)
        assert [v[0] for v in out.values()] == list(cs) and most_at_once(out) == 1
        # a control larger than the whole budget still runs, alone
        out = measure_controls(cs, timed, workers=4, costs={n: 10 * unit for n in cs}, budget=unit)
        assert most_at_once(out) == 1
        # room for every estimate: as many as the workers
        out = measure_controls(cs, timed, workers=4, costs=even, budget=held_bytes() + 40 * unit)
        assert most_at_once(out) == 4
        # the largest starts first; beside it, the first of the rest that fits, not the next
        # in line: c3 (3 units) with c0 (1), never a third
        costs = {"c0": unit, "c1": 2 * unit, "c2": 2 * unit, "c3": 3 * unit}
        out = measure_controls(cs, timed, workers=4, costs=costs, budget=held_bytes() + 4 * unit + unit // 2)
        starts = sorted(out, key=lambda n: out[n][1])
        assert starts[:2] == ["c3", "c0"] and most_at_once(out) == 2, out
        # without a budget, as before: sizes order them and workers bound them
        out = measure_controls(cs, timed, workers=2, costs=costs)
        assert most_at_once(out) == 2 and [v[0] for v in out.values()] == list(cs)
    """)


def test_results_are_unpickled_beside_the_last_workers_only_where_the_budget_has_room() -> None:
    _in_fresh_process("""
        import time
        from ls_agreement.plugin.report.budget import held_bytes

        class Timed(dict):
            # when each control's result was taken in (release=True lets go of the control then)
            def __init__(self, *a):
                super().__init__(*a)
                self.released = {}

            def __delitem__(self, n):
                self.released[n] = time.monotonic()
                super().__delitem__(n)

        def big(c):
            time.sleep(0.3 if c.name == "c0" else 1.0)
            # c0's result is large: 60 MB pickled, counted 8 times over unpickled: more than
            # the 1.5 units the tight budget leaves beside c1
            return c.name, time.monotonic(), b"x" * (60_000_000 if c.name == "c0" else 1)

        unit = 200_000_000
        costs = {"c0": 2 * unit, "c1": unit}
        for budget, beside in ((held_bytes() + 2 * unit + unit // 2, False), (held_bytes() + 20 * unit, True)):
            cs = Timed(controls(2))
            out = measure_controls(cs, big, workers=2, costs=costs, budget=budget, release=True)
            assert [v[0] for v in out.values()] == ["c0", "c1"] and cs == {}
            c1_end = out["c1"][1]
            # c0 (the larger, alone in the tight budget) ends first; its result is taken in
            # while c1 still runs only where the budget has room for it beside c1
            assert (cs.released["c0"] < c1_end) == beside, (budget, cs.released, c1_end)
    """)


def test_one_worker_releases_each_control_after_it() -> None:
    import pandas as pd

    from ls_agreement.adapters.control import ControlData
    cs = {f"c{k}": ControlData(name=f"c{k}", tag="choices", kind="labels", object_name="x", options=None,
                               candidates=["nominal"], default_distance="nominal",
                               table=pd.DataFrame({"item": [1], "annotator": ["a"], "value": ["v"]}))
          for k in range(3)}
    seen: list[list[str]] = []
    out = measure_controls(cs, lambda c: seen.append(list(cs)) or c.name, workers=1, release=True)
    # each control measured while it, and the ones after it, are still there
    assert seen == [["c0", "c1", "c2"], ["c1", "c2"], ["c2"]]
    assert out == {"c0": "c0", "c1": "c1", "c2": "c2"} and cs == {}


def test_one_worker_runs_everything_here() -> None:
    import pandas as pd

    from ls_agreement.adapters.control import ControlData
    cs = {f"c{k}": ControlData(name=f"c{k}", tag="choices", kind="labels", object_name="x", options=None,
                               candidates=["nominal"], default_distance="nominal",
                               table=pd.DataFrame({"item": [1], "annotator": ["a"], "value": ["v"]}))
          for k in range(3)}
    out = measure_controls(cs, lambda c: os.getpid(), workers=1)
    assert set(out.values()) == {os.getpid()}


def test_the_export_is_read_in_a_child_and_its_errors_are_its_own() -> None:
    _in_fresh_process("""
        from ls_agreement.adapters.errors import AdapterError
        from ls_agreement.plugin.report.parallel import run_forked
        from ls_agreement.plugin.report.build import build_report
        from ls_agreement.plugin.settings import ReportSettings
        here = os.getpid()
        assert run_forked(lambda: os.getpid()) != here                 # computed in a child
        assert run_forked(lambda: (lambda: 5))() == 5                  # will not pickle: computed here
        calls = []
        def bad():
            calls.append(os.getpid())
            raise AdapterError("task 7, annotation 3: bad value")
        try:
            run_forked(bad, errors=(AdapterError,))
        except AdapterError as exc:
            assert "task 7, annotation 3" in str(exc)
        else:
            raise AssertionError("no error")
        assert calls == [], calls                                      # raised as the child raised it, not run again here
        # a strict report of a bad export: the reader's error reaches the caller
        config = '<View><Text name="t" value="$t"/><Choices name="c" toName="t"><Choice value="a"/></Choices></View>'
        tasks = [{"id": 1, "data": {"t": "x"}, "annotations": [{"id": 9, "completed_by": 1, "result": [
            {"from_name": "c", "to_name": "t", "type": "choices", "value": {"choices": "not a list"}}]}]}]
        try:
            build_report(config, tasks, ReportSettings(strict=True), workers=2)
        except AdapterError as exc:
            assert "task 1" in str(exc), exc
        else:
            raise AssertionError("no error")
    """)


def test_an_export_read_in_parts_gives_the_very_same_report(tmp_path) -> None:
    """``ls-agreement report`` with worker processes reads the export in parts side by side
    (build.py ``_read_in_parts``): byte for byte the report of one process, also where a
    cut falls on an object that only looks like a task's start, and a strict reading's
    error is the one reading's."""
    import json

    from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate

    users = {a.email: 10 + k for k, a in enumerate(ANNOTATORS)}
    tasks = [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=500, seed=8).tasks, start=1)]
    tasks[300]["annotations"][0]["result"].append({"from_name": "sentiment", "value": "not an object"})
    config = tmp_path / "config.xml"
    config.write_text(DEMO_CONFIG, encoding="utf-8")

    def report(export, *args):
        done = subprocess.run([sys.executable, "-m", "ls_agreement.plugin.cli", "report", "--config", str(config),
                               "--bootstrap", "40", *args, str(export)], capture_output=True, text=True, timeout=600)
        return done.returncode, done.stdout, done.stderr

    plain = tmp_path / "plain.json"
    plain.write_text(json.dumps(tasks), encoding="utf-8")
    assert plain.stat().st_size > 3 * (1 << 20)      # cut into 3 parts of a chunk or more each
    # the parts are read, and joined (a reading that falls back to the whole would pass the
    # comparisons below as well)
    _in_fresh_process(f"""
        from ls_agreement.adapters.adapt import adapt
        from ls_agreement.adapters.export_stream import ExportFile
        from ls_agreement.plugin.report.build import _read_in_parts
        from ls_agreement.plugin.settings import ReportSettings
        from ls_agreement.demo.data import DEMO_CONFIG
        from ls_agreement.plugin.report.build import tasks_per_annotator
        caught = []
        os.makedirs({str(tmp_path / "spill")!r})
        parts = _read_in_parts(DEMO_CONFIG, ExportFile({str(plain)!r}), ReportSettings(), 3, caught,
                               {str(tmp_path / "spill")!r}, None)
        whole = adapt(DEMO_CONFIG, ExportFile({str(plain)!r}))
        assert parts is not None and parts.n_tasks == whole.n_tasks == 500 and parts.warnings == whole.warnings
        assert parts.tasks_of == tasks_per_annotator(whole.controls.values())
        for n in whole.controls:
            assert parts[n].table.equals(whole.controls[n].table), n
    """)
    for t in tasks:
        t["data"]["pages"] = [{"data": "p1"}, {"data": "p2"}]  # ", {" and an object with "data" inside tasks
    decoys = tmp_path / "decoys.json"
    decoys.write_text(json.dumps(tasks, indent=1), encoding="utf-8")
    for export in (plain, decoys):
        one = report(export, "--workers", "1")
        assert one[0] == 0 and "warning" in one[2], one[2]
        assert report(export, "--workers", "3") == one
    strict = report(plain, "--workers", "1", "--strict")
    assert strict[0] == 2 and "task 301" in strict[2], strict
    assert report(plain, "--workers", "3", "--strict") == strict


def test_the_reading_child_reads_its_parts_in_children_of_its_own() -> None:
    # the export's reading runs in a child (run_forked), which forks one reader per part
    # (map_forked); a daemonic child may not start children, and the reading then ran again
    # in the parent: nothing failed, but the parent's heap held what reading leaves
    _in_fresh_process("""
        from ls_agreement.plugin.report.parallel import map_forked, run_forked
        here = os.getpid()
        pids = run_forked(lambda: (os.getpid(), map_forked([os.getpid, os.getpid, os.getpid])))
        reader, parts = pids
        assert reader != here and reader not in parts, (here, pids)
        assert len(set(parts)) == 3 and here not in parts, (here, pids)
    """)


def test_spilled_controls_are_read_back_by_their_workers_alone(tmp_path) -> None:
    _in_fresh_process(f"""
        from ls_agreement.plugin.report.parallel import SpilledControls
        cs = controls(4)
        spilled = SpilledControls({str(tmp_path)!r}, cs)
        assert list(spilled) == list(cs)
        back = spilled["c2"]
        assert back is not cs["c2"] and back.table.equals(cs["c2"].table) and back.name == "c2"
        # this process never reads one back: each worker reads its own
        here = os.getpid()
        loads = []
        class Counted(SpilledControls):
            def __getitem__(self, name):
                if os.getpid() == here:
                    loads.append(name)
                return super().__getitem__(name)
        os.makedirs({str(tmp_path / "b")!r})
        counted = Counted({str(tmp_path / "b")!r}, cs)
        # the sizes that order the work come with them, as the reading process measured them
        out = measure_controls(counted, lambda c: (c.name, len(c.table), os.getpid()), workers=2, release=True,
                               sizes={{n: len(c.table) for n, c in cs.items()}})
        assert [(v[0], v[1]) for v in out.values()] == [(f"c{{k}}", k + 1) for k in range(4)]
        assert here not in {{v[2] for v in out.values()}} and loads == []
        assert len(counted) == 0 and os.listdir({str(tmp_path / "b")!r}) == []   # released: files gone
    """)


def test_a_spilled_report_is_the_same_and_leaves_no_files(tmp_path) -> None:
    _in_fresh_process(f"""
        import tempfile
        from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
        from ls_agreement.plugin.report import build
        from ls_agreement.plugin.report.parallel import SpilledControls
        from ls_agreement.plugin.settings import ReportSettings
        users = {{a.email: 10 + k for k, a in enumerate(ANNOTATORS)}}
        tasks = [{{**t, "id": k}} for k, t in enumerate(generate(users, n_tasks=40, seed=3).tasks, start=1)]
        settings = ReportSettings(bootstrap=40, seed=2)
        one = build.build_report(DEMO_CONFIG, tasks, settings)
        tempfile.tempdir = {str(tmp_path)!r}
        made = []
        real = build._project
        def spying(adapted, caught, settings, names, spill):
            got = real(adapted, caught, settings, names, spill)
            made.append((spill, type(got.controls).__name__))
            return got
        build._project = spying
        many = build.build_report(DEMO_CONFIG, tasks, settings, workers=2)
        assert many.to_json(indent=1) == one.to_json(indent=1)
        # written by the reading child (its _project is not seen here), gone afterwards
        assert made == [] and os.listdir({str(tmp_path)!r}) == []
        # where the files cannot be written, the controls stay in memory: the same report
        build._project = real
        adapted = build.adapt(DEMO_CONFIG, tasks)
        kept = build._project(adapted, [], settings.validate(), None, {str(tmp_path / "missing")!r})
        assert not isinstance(kept.controls, SpilledControls) and list(kept.controls) == list(adapted.controls)
    """)


def test_a_workers_estimate_grows_with_its_answers_and_the_budget_with_the_machine() -> None:
    from ls_agreement.plugin.report import budget

    # linear in the answers; a kind measured for itself, others at the largest measured
    assert budget.worker_bytes("scalars", 0) == budget.worker_bytes("boxes", 0) > 0
    assert budget.worker_bytes("boxes", 400_000) > budget.worker_bytes("scalars", 400_000)
    assert (budget.worker_bytes("spans", 2_000) - budget.worker_bytes("spans", 1_000)
            == budget.worker_bytes("spans", 1_000) - budget.worker_bytes("spans", 0))
    assert budget.worker_bytes("masks", 1_000) == budget.worker_bytes("boxes", 1_000)
    # a 100,000-task demo project's two largest controls (400,000 answers each) start side
    # by side within the default budget, beside a report process of 0.15 GB
    assert budget.worker_bytes("boxes", 400_000) + budget.worker_bytes("spans", 400_000) + 150_000_000 \
        <= budget.DEFAULT_BUDGET
    free = budget.available_bytes()
    if free is None:
        pytest.skip("no /proc/meminfo here")
    assert 0 < budget.default_budget() <= min(budget.DEFAULT_BUDGET, free)
    held = budget.held_bytes()
    assert 10_000_000 < held < free    # this interpreter, numpy and pandas loaded


def test_parts_read_a_few_at_a_time_each_in_a_child(tmp_path) -> None:
    # an export of more parts than workers (build.PART_BYTES): every part in a child of
    # its own, never more than ``at_once`` alive, results in order; after a failure no
    # part starts, and the first failure in order is the one raised
    _in_fresh_process(f"""
        import time
        from ls_agreement.plugin.report.parallel import map_forked
        here = os.getpid()
        log = {str(tmp_path / "log")!r}

        def part(k, fail=False):
            with open(log, "a") as fh:
                fh.write(f"start {{k}} {{time.monotonic()}}\\n")
            time.sleep(0.3)
            with open(log, "a") as fh:
                fh.write(f"end {{k}} {{time.monotonic()}}\\n")
            if fail:
                raise ValueError(f"part {{k}}")
            return k, os.getpid()

        out = map_forked([lambda k=k: part(k) for k in range(7)], at_once=2)
        assert [k for k, _ in out] == list(range(7)) and here not in {{p for _, p in out}}
        alive = peak = 0
        for line in sorted(open(log), key=lambda s: float(s.split()[2])):
            alive += 1 if line.startswith("start") else -1
            peak = max(peak, alive)
        assert peak == 2, peak
        os.remove(log)
        try:
            map_forked([lambda k=k: part(k, fail=k in (1, 2)) for k in range(6)], at_once=2)
        except ValueError as exc:
            assert str(exc) == "part 1", exc
        else:
            raise AssertionError("no error")
        started = [int(s.split()[1]) for s in open(log) if s.startswith("start")]
        assert max(started) <= 3, started      # nothing after the first failure was seen
    """)


def test_parts_are_read_as_many_at_a_time_as_the_budget_holds(tmp_path, monkeypatch) -> None:
    """build.py ``_read_in_parts``: more parts than workers where the export is larger than
    ``PART_BYTES``, and no more readers side by side than the memory budget holds
    (``budget.reader_bytes``); one always reads."""
    import json

    from ls_agreement.adapters import export_stream
    from ls_agreement.adapters.export_stream import ExportFile
    from ls_agreement.demo.data import ANNOTATORS, DEMO_CONFIG, generate
    from ls_agreement.plugin.report import build
    from ls_agreement.plugin.report.budget import reader_bytes
    from ls_agreement.plugin.settings import ReportSettings

    users = {a.email: 10 + k for k, a in enumerate(ANNOTATORS)}
    tasks = [{**t, "id": k} for k, t in enumerate(generate(users, n_tasks=400, seed=3).tasks, start=1)]
    export = tmp_path / "export.json"
    export.write_text(json.dumps(tasks), encoding="utf-8")
    size = export.stat().st_size
    monkeypatch.setattr(build, "PART_BYTES", size // 5)
    monkeypatch.setattr(export_stream, "CHUNK_CHARS", size // 40)
    asked: list[tuple[int, int | None]] = []

    def in_turn(fns, at_once=None):            # the parts read here, one after the other
        asked.append((len(fns), at_once))
        return [f() for f in fns]

    monkeypatch.setattr(build, "map_forked", in_turn)
    for budget, want in ((10 ** 12, 4), (reader_bytes(size // 4) * 2 + 1, 2), (1, 1)):
        spill = tmp_path / f"spill-{budget}"
        spill.mkdir()
        parts = build._read_in_parts(DEMO_CONFIG, ExportFile(export), ReportSettings(), 4, [], str(spill), None,
                                     budget)
        assert parts is not None and parts.n_tasks == 400
        n, at_once = asked[-1]
        assert n >= 5 and at_once == want, (asked, budget)
