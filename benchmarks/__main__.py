"""Run the benchmarks: `python -m benchmarks [name ...] [-- options]`.

Names: engine, distances, adapters, seed_measures, crowd, flags, tracks, masks, sync, memory. Options after ``--`` go to the
benchmarks whose ``main(argv)`` takes them (e.g. ``python -m benchmarks sync -- --tasks 1000``).

Each module prints its timings, the ratio against the peer library measured in the same
run, and whether its target is met. Benchmarks are not tests: they time.
"""
from __future__ import annotations

import importlib
import inspect
import pkgutil
import sys
import time
from pathlib import Path


def main(argv: list[str]) -> int:
    extra: list[str] = []
    if "--" in argv:
        argv, extra = argv[: argv.index("--")], argv[argv.index("--") + 1:]
    here = Path(__file__).parent
    names = sorted(m.name[len("bench_"):] for m in pkgutil.iter_modules([str(here)]) if m.name.startswith("bench_"))
    # sync starts a real Label Studio and writes 10,000 tasks (about half an hour here), memory
    # writes and reports exports of up to 100,000 tasks (1 GB): by name only
    wanted = argv or [n for n in names if n not in ("sync", "memory")]
    unknown = set(wanted) - set(names)
    if unknown:
        print(f"unknown benchmark(s) {sorted(unknown)}; available: {names}", file=sys.stderr)
        return 2
    for name in wanted:
        print(f"\n=== {name} ===", flush=True)
        t0 = time.perf_counter()
        bench = importlib.import_module(f"benchmarks.bench_{name}").main
        takes_argv = "argv" in inspect.signature(bench).parameters
        bench(extra) if takes_argv else bench()
        print(f"--- {name}: {time.perf_counter() - t0:.1f} s", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
