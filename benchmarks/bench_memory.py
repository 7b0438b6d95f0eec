"""Bounded memory (issue 24.1): ``ls-agreement report`` on demo-shaped exports of 10,000
and 100,000 tasks (1,000,000 with ``--million``) against ``json.load`` of the same file.

Each export is written once by :mod:`benchmarks.big_export` (the demo's generator: five
controls, 3-5 of six annotators per task) into ``--dir`` and reused. Both commands run as
child processes of this one, one after the other, and each child's wall-clock time, CPU
time (user + system, the report's worker processes included) and peak memory are printed
side by side -- ``ru_maxrss`` from ``os.wait4`` (the largest single process) and, as the
report measures its controls in worker processes, the peak of the PSS summed over the
whole process tree (sampled every 0.2 s; copy-on-write pages shared with the parent count
once), the figure held against the targets: ``json.load`` only reads the file, so it is the
floor any reader of the whole document pays. Targets: 100,000 tasks in ≤ 60 s and ≤ 2 GB;
1,000,000 tasks in ≤ 15 min and ≤ 4 GB. The load average is printed too: on a shared
machine the wall-clock time stretches while the CPU time does not.

Where ``json.load`` would not fit in the memory the machine has (at 1,000,000 tasks it
needs about 60 GB), it is not run: the previous size's figures, scaled by the file's size,
stand in for it and are printed as extrapolated. ``--workers N`` runs the report with that
many workers instead of its default, ``--memory GB`` with that budget instead of 2 GB; a report the kernel kills (out of memory) is printed
as killed, and the benchmark goes on.

``--serve`` also measures what ``serve`` holds for the project between events: its mirror
(tasks held packed, filled task by task as a full read fills it) and the baseline made from
it, in one child process (``serve_child``); the baseline is made as serve makes it, in a
worker process of that child, and the two peaks are printed apart.

``--state`` also measures the project's live state kept in Redis past one machine
(``plugin/queue/shared_state.py``, a real ``redis-server`` on a loopback port): a child
process fills the mirror and makes the baseline as ``--serve`` does, then saves the state
(as a full read or a baseline swap does) and restores it into a fresh project (as a worker
taking the project over does); what each step adds at its peak to the memory the process
held before it (``VmHWM`` reset before each step), its time, and the state's size in
Redis. The peer in the same run is the serialisation the state had before it was written
in blocks: the mirror exported whole and the baseline's report serialised as one JSON value.

``--compare PYTHONPATH`` also runs the report of another checkout (a directory holding an
``ls_agreement`` package, e.g. a copy of the tree before a change) on the same export and
prints how far the two reports' numbers are apart (point estimates; intervals; per-task σ).

Run: ``python -m benchmarks memory`` or e.g. ``python -m benchmarks memory -- --tasks 10000``
(``--skip-report`` leaves out ``json.load`` and the report, for ``--serve`` or ``--state`` alone).
"""
from __future__ import annotations

import argparse
import json
import math
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from benchmarks.big_export import config_xml, write_export

TARGETS = {100_000: (60.0, 2.0), 1_000_000: (900.0, 4.0)}   # tasks -> (wall s, peak GB)
DEFAULT_DIR = Path(tempfile.gettempdir()) / "ls-agreement-bench-memory"
#: json.load's peak over the file's size (6.1 measured at 100,000 tasks), rounded up
JSON_LOAD_TIMES_FILE = 7


def _tree(pid: int) -> list[int]:
    """``pid`` and its descendants (Linux ``/proc/PID/task/TID/children``)."""
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        out.append(p)
        try:
            for tid in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{tid}/children") as fh:
                    todo.extend(int(c) for c in fh.read().split())
        except OSError:
            continue
    return out


def _proc_bytes(path: str, key: str) -> int:
    """The ``key:`` line of a /proc file given in kB, in bytes; 0 if unreadable."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key + ":"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def _pss(pid: int) -> int:
    """Proportional set size of one process in bytes (its shared pages split among their
    users: a forked worker's pages still shared with its parent count once over the tree)."""
    return _proc_bytes(f"/proc/{pid}/smaps_rollup", "Pss")


def _available() -> int:
    """Bytes the kernel says can be allocated without swapping (``MemAvailable``); 0 if unknown."""
    return _proc_bytes("/proc/meminfo", "MemAvailable")


class _TreeMemory(threading.Thread):
    """Samples the summed PSS of a process and its descendants (the report's worker
    processes) every ``every`` seconds; ``peak`` is the largest sum seen. ``ru_maxrss``
    alone would miss workers: it is the largest *single* process of the tree."""

    def __init__(self, pid: int, every: float = 0.2) -> None:
        super().__init__(daemon=True)
        self.pid, self.every, self.peak, self.most = pid, every, 0, 1
        self.at, self.split = 0.0, [0]     # when the peak was seen, and each process's share of it
        self.done = threading.Event()

    def run(self) -> None:
        t0 = time.perf_counter()
        while not self.done.wait(self.every):
            pids = _tree(self.pid)
            each = [_pss(p) for p in pids]
            if sum(each) > self.peak:
                self.peak, self.at, self.split = sum(each), time.perf_counter() - t0, sorted(each, reverse=True)
            self.most = max(self.most, len(pids))


def _run(args: list[str], env: dict[str, str] | None = None) -> dict[str, Any]:
    """Run a child process; its wall time, CPU seconds (its own and its waited-for
    children's), peak RSS of the largest single process (bytes) and peak PSS summed over
    the process tree (``tree``, sampled; the figure to hold against a memory target)."""
    t0 = time.perf_counter()
    proc = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env)
    sampler = _TreeMemory(proc.pid) if os.path.exists(f"/proc/{proc.pid}") else None
    if sampler:
        sampler.start()
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    if sampler:
        sampler.done.set()
        sampler.join()
    err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
    proc.stderr and proc.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code < 0:         # killed (at 1,000,000 tasks most likely by the kernel, out of memory)
        print(f"  ... killed by signal {-code} after {wall:.0f} s{' (out of memory?)' if code == -9 else ''}",
              flush=True)
    elif code != 0:
        raise RuntimeError(f"{' '.join(args[:4])} ... exited {code}: {err[-2000:]}")
    peak = usage.ru_maxrss * 1024.0
    tree = max(float(sampler.peak), peak) if sampler else peak
    return {"wall": wall, "cpu": usage.ru_utime + usage.ru_stime, "peak": peak, "tree": tree,
            "procs": float(sampler.most) if sampler else 1.0, "killed": float(code < 0),
            "tree_at": sampler.at if sampler else 0.0,
            "tree_split": (" + ".join(f"{b / 2 ** 30:.2f}" for b in sampler.split)
                           if sampler and len(sampler.split) > 1 else "")}


def _export(directory: Path, n: int, seed: int) -> Path:
    path = directory / f"demo-{n}-seed{seed}.json"
    done = path.with_suffix(".done")
    if not done.exists():
        t0 = time.perf_counter()
        size = write_export(path, n, seed)
        done.write_text(str(size))
        print(f"  wrote {path.name}: {size / 1e6:,.0f} MB in {time.perf_counter() - t0:.0f} s", flush=True)
    return path


def _report_cmd(export: Path, config: Path, out: Path, workers: int | None = None,
                memory: float | None = None) -> list[str]:
    return [sys.executable, "-m", "ls_agreement.plugin.cli", "report", str(export), "--config", str(config),
            "--out", str(out)] + ([] if workers is None else ["--workers", str(workers)]) \
        + ([] if memory is None else ["--memory", str(memory)])


def _fmt(r: dict[str, Any]) -> str:
    # where the tree's peak was: which processes held how much, and when (issue 24)
    split = f", at {r['tree_at']:.0f} s: {r['tree_split']}" if r.get("tree_split") else ""
    tree = f" (all {r['procs']:.0f} processes: {r['tree'] / 2 ** 30:5.2f} GB{split})" if r["procs"] > 1 else ""
    return f"{r['wall']:7.1f} s wall {r['cpu']:7.1f} s CPU {r['peak'] / 2 ** 30:6.2f} GB{tree}"


def _numbers(report: dict[str, Any]) -> dict[str, float]:
    """Every number of a report worth comparing, by path."""
    out: dict[str, float] = {}
    for name, c in report["controls"].items():
        for k in ("alpha", "ks", "sigma", "threshold", "d_e"):
            if c.get(k) is not None:
                out[f"{name}.{k}"] = c[k]
        for k, (lo, hi) in ((k, v) for k, v in c["ci"].items() if isinstance(v, list)):
            if lo is not None:
                out[f"{name}.ci.{k}.low"], out[f"{name}.ci.{k}.high"] = lo, hi
        for a, rec in c["annotators"].items():
            for k in ("sigma", "alpha"):
                if rec.get(k) is not None:
                    out[f"{name}.annotators.{a}.{k}"] = rec[k]
    for t, rec in report["tasks"].items():
        if rec.get("sigma") is not None:
            out[f"tasks.{t}.sigma"] = rec["sigma"]
    return out


def compare(a_path: Path, b_path: Path) -> None:
    """Print how far two reports' numbers are apart (largest absolute difference per family)."""
    a, b = json.loads(a_path.read_text()), json.loads(b_path.read_text())
    na, nb = _numbers(a), _numbers(b)
    missing = sorted(set(na) ^ set(nb))
    worst: dict[str, tuple[float, str]] = {}
    for k in set(na) & set(nb):
        fam = "ci" if ".ci." in k else ("tasks" if k.startswith("tasks.") else
                                        "annotators" if ".annotators." in k else "point")
        d = abs(na[k] - nb[k]) if math.isfinite(na[k]) and math.isfinite(nb[k]) else 0.0
        if d > worst.get(fam, (-1.0, ""))[0]:
            worst[fam] = (d, k)
    flags_a = {t for t, r in a["tasks"].items() if r.get("flag")}
    flags_b = {t for t, r in b["tasks"].items() if r.get("flag")}
    print(f"  compared {len(set(na) & set(nb)):,} numbers; only in one report: {len(missing)}"
          f"{' e.g. ' + missing[0] if missing else ''}")
    for fam, (d, k) in sorted(worst.items()):
        print(f"    largest difference, {fam:10s}: {d:.3g} ({k})")
    print(f"    flagged tasks: {len(flags_a):,} vs {len(flags_b):,}, differing {len(flags_a ^ flags_b):,}")


def serve_child(export: str, config: str, out: str) -> None:
    """In a child process (``--serve``): what ``serve`` holds for a project between events
    and what its baseline costs. The mirror is filled from the export read task by task, as
    a full read spools Label Studio's export to a file and reads it back
    (``Connection.stream_tasks``), then the baseline is made from the mirror
    (``make_baseline``, as a full read or a background baseline makes it); the figures go to
    ``out`` as JSON. The baseline is made as ``serve`` makes it by default, in a spawned
    worker process (``[sync] baseline_worker = "process"``): this process's peak and the
    worker's are printed apart."""
    import gc
    import resource

    from ls_agreement.adapters.export_stream import iter_export
    from ls_agreement.plugin.live.baseline_worker import make_baseline_in_worker
    from ls_agreement.plugin.live.mirror import MirrorTask, ProjectMirror
    from ls_agreement.plugin.settings import ReportSettings

    def rss() -> float:
        return float(_proc_bytes("/proc/self/status", "VmRSS"))

    start = rss()
    t0 = time.perf_counter()
    mirror = ProjectMirror()
    for task in iter_export(export):
        mirror.put_task(MirrorTask.of(task))
    gc.collect()
    t1 = time.perf_counter()
    held = rss() - start
    fill_peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0
    base = make_baseline_in_worker(Path(config).read_text(encoding="utf-8"), mirror, ReportSettings())
    t2 = time.perf_counter()
    gc.collect()
    Path(out).write_text(json.dumps({
        "tasks": len(mirror), "packed": mirror.packed_bytes(), "mirror_rss": held, "fill_s": t1 - t0,
        "fill_peak": fill_peak, "baseline_s": t2 - t1, "with_baseline_rss": rss() - start,
        "service_peak": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024.0,
        "worker_peak": resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024.0,
        "flagged": sum(1 for t in base.report.tasks.values() if t.flag)}))


def _child(function: str, *args: str) -> tuple[dict[str, float], dict[str, Any]] | None:
    """Run ``benchmarks.bench_memory.<function>(*args, out)`` in a child process (:func:`_run`):
    the run's figures and the ones the child wrote to ``out`` (None: it was killed)."""
    fd, name = tempfile.mkstemp(suffix=".json")
    os.close(fd)
    try:
        run = _run([sys.executable, "-c", f"import sys; from benchmarks.bench_memory import {function}; "
                    f"{function}(*sys.argv[1:])", *args[:2], name, *args[2:]])
        return None if run["killed"] else (run, json.loads(Path(name).read_text()))
    finally:
        os.unlink(name)


def _serve(export: Path, config: Path) -> None:
    got = _child("serve_child", str(export), str(config))
    if got is None:
        return
    run, f = got
    gb = 2 ** 30
    print(f"  serve: mirror of {f['tasks']:,} tasks holds {f['mirror_rss'] / gb:.2f} GB "
          f"({f['packed'] / gb:.2f} GB packed), filled in {f['fill_s']:.1f} s (peak {f['fill_peak'] / gb:.2f} GB); "
          f"baseline made in a worker process in {f['baseline_s']:.1f} s (the worker's peak "
          f"{f['worker_peak'] / gb:.2f} GB); mirror and baseline held {f['with_baseline_rss'] / gb:.2f} GB, "
          f"the service's peak {f['service_peak'] / gb:.2f} GB; the process tree: {_fmt(run)}", flush=True)


def state_child(export: str, config: str, out: str, redis_url: str) -> None:
    """In a child process (``--state``): the project's live state saved to Redis and
    restored, each step's peak over what the process held before it; figures to ``out``."""
    import gc

    from ls_agreement.adapters.export_stream import iter_export
    from ls_agreement.plugin.client import Connection
    from ls_agreement.plugin.live.baseline_worker import make_baseline_in_worker
    from ls_agreement.plugin.live.mirror import MirrorTask, ProjectMirror
    from ls_agreement.plugin.live.project import LiveOutcome, LiveProject
    from ls_agreement.plugin.live.snapshot import _adapter, _baseline_data
    from ls_agreement.plugin.queue.redis_queue import RedisQueue
    from ls_agreement.plugin.queue.shared_state import SharedProjects
    from ls_agreement.plugin.settings import ReportSettings, load_settings
    from ls_agreement.plugin.state import SyncState

    def rss() -> float:
        return float(_proc_bytes("/proc/self/status", "VmRSS"))

    def peak_over(step: Any) -> tuple[float, float]:
        """Run ``step``: its seconds and what the process's peak exceeded its memory before."""
        gc.collect()
        with open("/proc/self/clear_refs", "w") as f:     # VmHWM back to VmRSS
            f.write("5")
        before, t0 = rss(), time.perf_counter()
        step()
        return time.perf_counter() - t0, _proc_bytes("/proc/self/status", "VmHWM") - before

    tmp = Path(tempfile.mkdtemp())
    settings = load_settings(None)

    def project() -> LiveProject:
        return LiveProject(Connection("http://127.0.0.1:9", "t" * 40), 1, settings, SyncState(tmp / "s.sqlite"),
                           tmp / "out")

    proj = project()
    proj.mirror = ProjectMirror()
    for task in iter_export(export):
        proj.mirror.put_task(MirrorTask.of(task))
    proj.config_xml = Path(config).read_text(encoding="utf-8")
    proj.base = make_baseline_in_worker(proj.config_xml, proj.mirror, ReportSettings())
    q = RedisQueue(redis_url, lease=30)
    shared = SharedProjects(q.r, log=None)
    save_s, save_peak = peak_over(lambda: shared.save(proj, LiveOutcome("full"), []))
    stored = sum(int(q.r.memory_usage(k) or 0) for k in q.r.scan_iter("lsa:proj:1:*"))

    def whole() -> None:      # the state as one value, as it was written before the blocks
        tasks = proj.mirror.export()
        body = _adapter(list[dict[str, Any]]).dump_json(tasks) + _adapter(type(_baseline_data(proj.base))).dump_json(
            _baseline_data(proj.base))
        del tasks, body

    whole_s, whole_peak = peak_over(whole)
    proj.reset()
    back = project()
    gc.collect()
    held_before = rss()
    restore_s, restore_peak = peak_over(lambda: shared.restore(back))
    assert back.mirror is not None and len(back.mirror) > 0
    Path(out).write_text(json.dumps({
        "tasks": len(back.mirror), "save_s": save_s, "save_peak": save_peak, "stored": stored,
        "whole_s": whole_s, "whole_peak": whole_peak, "restore_s": restore_s, "restore_peak": restore_peak,
        "restored_holds": rss() - held_before}))
    q.close()


def _state(export: Path, config: Path) -> None:
    from tests.local_redis import LocalRedis

    with tempfile.TemporaryDirectory() as tmp, LocalRedis(Path(tmp) / "redis") as redis:
        got = _child("state_child", str(export), str(config), redis.url)
    if got is None:
        return
    _, f = got
    gb = 2 ** 30
    print(f"  state in Redis ({f['tasks']:,} tasks, {f['stored'] / gb:.2f} GB in Redis): saved in {f['save_s']:.1f} s, "
          f"peak +{f['save_peak'] / gb:.2f} GB over the held state (as one value, the mirror exported and the "
          f"baseline serialised whole: +{f['whole_peak'] / gb:.2f} GB, {f['whole_s']:.1f} s); restored in "
          f"{f['restore_s']:.1f} s, peak +{f['restore_peak'] / gb:.2f} GB for a state that holds "
          f"{f['restored_holds'] / gb:.2f} GB", flush=True)


def _report(args: argparse.Namespace, n: int, export: Path, config: Path,
            last_ref: tuple[dict[str, Any], int] | None) -> tuple[dict[str, Any], int] | None:
    """``json.load`` and ``ls-agreement report`` of one export, side by side (and
    ``--one-process``, ``--compare``); the reference for the next size is returned."""
    size = export.stat().st_size
    need, avail = JSON_LOAD_TIMES_FILE * size, _available()
    if avail and need > avail:
        # json.load of the whole document would be killed here: the reference is the
        # last size's, scaled by the file (json.load's time and memory are linear in it)
        if last_ref is None:
            ref = None
            print(f"  json.load          not run: it needs about {need / 2 ** 30:.0f} GB "
                  f"({JSON_LOAD_TIMES_FILE} x the file), {avail / 2 ** 30:.0f} GB available", flush=True)
        else:
            k = size / last_ref[1]
            ref = {**last_ref[0], **{key: last_ref[0][key] * k for key in ('wall', 'cpu', 'peak', 'tree')}}
            print(f"  json.load          not run (needs about {need / 2 ** 30:.0f} GB, "
                  f"{avail / 2 ** 30:.0f} GB available); the last size's x {k:.2f}, extrapolated: "
                  f"{_fmt(ref)}", flush=True)
    else:
        ref = _run([sys.executable, "-c", f"import json; json.load(open({str(export)!r}, 'rb'))"])
        last_ref = (ref, size)
        print(f"  json.load          {_fmt(ref)}", flush=True)
    out = args.dir / f"report-{n}.json"
    rep = _run(_report_cmd(export, config, out, workers=args.workers, memory=args.memory))
    if rep["killed"]:
        return last_ref
    verdict = ""
    if n in TARGETS:
        wall_t, gb_t = TARGETS[n]
        ok = rep["wall"] <= wall_t and rep["tree"] <= gb_t * 2 ** 30
        verdict = f"  target ≤ {wall_t:.0f} s, ≤ {gb_t:.0f} GB: {'met' if ok else 'NOT met'}"
    versus = (f"× json.load: {rep['wall'] / ref['wall']:.1f} wall, {rep['cpu'] / ref['cpu']:.1f} CPU, "
              f"{rep['tree'] / ref['peak']:.2f} memory; ") if ref else ""
    label = ("ls-agreement report" + (f" --workers {args.workers}" if args.workers is not None else "")
             + (f" --memory {args.memory:g}" if args.memory is not None else ""))
    print(f"  {label} {_fmt(rep)}  ({versus}{rep['tree'] / size:.2f} × the file){verdict}", flush=True)
    if args.one_process:
        one = args.dir / f"report-{n}-one.json"
        single = _run(_report_cmd(export, config, one, workers=1))
        same = one.read_bytes() == out.read_bytes()
        print(f"  ... --workers 1     {_fmt(single)}  (report {'byte-identical' if same else 'DIFFERENT'})",
              flush=True)
    if args.compare:
        other = args.dir / f"report-{n}-compare.json"
        env = dict(os.environ, PYTHONPATH=args.compare)
        old = _run(_report_cmd(export, config, other), env=env)
        print(f"  --compare report    {_fmt(old)}", flush=True)
        compare(other, out)
    return last_ref


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m benchmarks memory")
    ap.add_argument("--tasks", default="10000,100000", help="comma-separated export sizes")
    ap.add_argument("--million", action="store_true", help="also 1,000,000 tasks (an 8.6 GB export)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--dir", type=Path, default=DEFAULT_DIR, help="where the exports are written and kept")
    ap.add_argument("--compare", metavar="PYTHONPATH", help="also run another checkout's report and compare")
    ap.add_argument("--one-process", action="store_true",
                    help="also run the report with --workers 1 (every control in the one process) and check "
                         "that it writes the same bytes")
    ap.add_argument("--serve", action="store_true",
                    help="also what `serve` holds for the project (its mirror, filled as a full read fills it) "
                         "and what its baseline costs, in one process")
    ap.add_argument("--state", action="store_true",
                    help="also the project's live state saved to Redis and restored (plugin/queue/shared_state.py)")
    ap.add_argument("--skip-report", action="store_true", help="no json.load and report runs (with --serve/--state)")
    ap.add_argument("--workers", type=int, metavar="N",
                    help="run the report with --workers N instead of its default (--workers 1 is what fits "
                         "a 1,000,000-task export on a machine of 24 GB)")
    ap.add_argument("--memory", type=float, metavar="GB",
                    help="run the report with --memory GB instead of its default budget (2 GB); e.g. "
                         "--workers 4 --memory 100 shows the tree four workers make without it")
    args = ap.parse_args(argv or [])
    sizes = [int(s) for s in args.tasks.split(",") if s.strip()] + ([1_000_000] if args.million else [])
    args.dir.mkdir(parents=True, exist_ok=True)
    config = args.dir / "demo.xml"
    config.write_text(config_xml(), encoding="utf-8")
    print(f"cores {os.cpu_count()}, load average {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)
    last_ref: tuple[dict[str, Any], int] | None = None
    for n in sizes:
        export = _export(args.dir, n, args.seed)
        size = export.stat().st_size
        print(f"{n:,} tasks, export {size / 1e6:,.0f} MB", flush=True)
        if not args.skip_report:
            last_ref = _report(args, n, export, config, last_ref)
        if args.serve:
            _serve(export, config)
        if args.state:
            _state(export, config)
        print(f"  load average now {' '.join(f'{x:.1f}' for x in os.getloadavg())}", flush=True)


if __name__ == "__main__":
    main(sys.argv[1:])
