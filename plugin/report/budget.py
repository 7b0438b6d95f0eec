"""The report's memory budget: how much a worker measuring one control is expected to hold,
and how much the machine has (issue 24).

With one worker per CPU, the process tree of a report grows with the cores: at 100,000 demo
tasks each control's worker peaks at 0.5–1.0 GB, so two workers met 2 GB and four did not
(2.73 GB measured with ``--workers 4``). :func:`.parallel.measure_controls` therefore starts
a control's worker only while the estimates of the workers running, beside what the parent
holds, stay within a budget (at least one worker always runs, so a control larger than the
budget is measured alone).

The estimate is linear in the control's answers (its table's rows): a fixed part (the
interpreter's pages a forked worker adds, the bootstrap's replicate blocks, which are
bounded at any size) and a part per answer that depends on the kind of value. The figures
per answer are the proportional set size of each kind's worker at its peak, measured at
10,000 and 100,000 demo tasks (2026-12-07: boxes 1.01 GB, spans 0.88 GB, choices 0.57 GB,
text areas 0.52 GB, rankings 0.60 GB for 400,000 answers each; 2026-12-08, with the
bootstrap's replicates in blocks of half the size and span F1's rows in typed arrays: boxes
0.88–0.93 GB, spans 0.79–0.80 GB, so that the two largest controls of a 100,000-task
project start side by side within 2 GB, where they had waited for each other whenever this
process held more than 0.11 GB); kinds not measured take the largest of them. An estimate
only orders and spaces the workers: the numbers of the report never depend on it.
"""
from __future__ import annotations

import os

__all__ = ["DEFAULT_BUDGET", "UNPICKLED_PER_BYTE", "worker_bytes", "reader_bytes", "available_bytes", "default_budget",
           "held_bytes"]

#: The process tree's default ceiling in bytes: issue 24's 2 GB for 100,000 tasks
#: (Label Studio runs beside us on the same server).
DEFAULT_BUDGET = 2_000_000_000
#: A worker's bytes before its control's answers: its own pages of the interpreter and
#: libraries, and the bootstrap's blocks of replicates (2 million floats each, up to 4 million past 500,000 items).
_FIXED = 200_000_000
#: Bytes per answer at a worker's peak, by value kind (the registry's prefixes).
_PER_ANSWER = {"boxes": 1_900, "spans": 1_550, "scalars": 930, "pairwise": 930, "sets": 930,
               "text": 800, "rankings": 1_000}
#: A worker's result, unpickled in the parent, over its pickled bytes (7-8 measured).
UNPICKLED_PER_BYTE = 8
_UNMEASURED = max(_PER_ANSWER.values())
#: Share of the memory the kernel reports available that a default budget may take.
_AVAILABLE_SHARE = 0.8


def worker_bytes(kind: str, answers: int) -> int:
    """Expected peak bytes of a worker that measures a control of value ``kind`` with
    ``answers`` rows (its proportional set size: pages it shares with the parent count by
    halves)."""
    return _FIXED + answers * _PER_ANSWER.get(kind, _UNMEASURED)


#: A part reader's bytes: a fixed part and a share of its part's bytes of export (its cells,
#: written to files as it ends; 0.21-0.29 GB measured for parts of 250 MB, 2026-12-07 (3)).
_READER_FIXED = 100_000_000
_READER_PER_BYTE = 0.75


def reader_bytes(part_bytes: int) -> int:
    """Expected peak bytes of a process reading ``part_bytes`` of an export in parts."""
    return _READER_FIXED + int(part_bytes * _READER_PER_BYTE)


def _proc_kb(path: str, key: str) -> int | None:
    """The bytes of a ``key:  N kB`` line of a ``/proc`` file; None where it cannot be read."""
    try:
        with open(path) as fh:
            for line in fh:
                if line.startswith(key):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        return None
    return None


def available_bytes() -> int | None:
    """The memory the kernel could give new processes without swapping (``MemAvailable``
    of ``/proc/meminfo``); None where it cannot be read."""
    return _proc_kb("/proc/meminfo", "MemAvailable:")


def default_budget() -> int:
    """:data:`DEFAULT_BUDGET`, or less where the machine has less available."""
    free = available_bytes()
    return DEFAULT_BUDGET if free is None else min(DEFAULT_BUDGET, int(free * _AVAILABLE_SHARE))


def held_bytes() -> int:
    """This process's proportional set size now (``/proc/self/smaps_rollup``: pages shared
    with its forked workers count by halves, as the workers' own estimates count them), or
    its resident size where that cannot be read; 0 where neither can."""
    pss = _proc_kb("/proc/self/smaps_rollup", "Pss:")
    if pss is not None:
        return pss
    try:
        with open("/proc/self/statm") as fh:
            return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return 0
