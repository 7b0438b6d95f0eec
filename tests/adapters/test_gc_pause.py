"""The collector pause around adapting (issue 24) stays inside a single-threaded caller."""
from __future__ import annotations

import gc
import subprocess
import sys
import textwrap
import threading

from ls_agreement.adapters.gc_pause import gc_paused


def _alone(code: str) -> None:
    """Run ``code`` in a fresh interpreter: the test session may hold threads of its own."""
    done = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr


def test_alone_the_collector_pauses_and_comes_back() -> None:
    _alone("""
        import gc
        from ls_agreement.adapters.gc_pause import gc_paused
        assert gc.isenabled()
        with gc_paused():
            assert not gc.isenabled()
        assert gc.isenabled()
        """)


def test_a_caller_that_switched_it_off_keeps_it_off() -> None:
    _alone("""
        import gc
        from ls_agreement.adapters.gc_pause import gc_paused
        gc.disable()
        with gc_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()
        """)


def test_beside_other_threads_the_collector_is_left_alone() -> None:
    """In a server (serve's baseline thread beside its web threads) another thread's garbage
    must not wait on an adapting pass."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        with gc_paused():
            assert gc.isenabled()
    finally:
        stop.set()
        other.join()


def test_cycles_left_by_the_block_are_collected_when_it_ends() -> None:
    """Measuring a control may leave reference cycles: ``collect=True`` frees them at the end,
    while the objects the block made and kept stay."""
    _alone("""
        import gc, weakref
        from ls_agreement.adapters.gc_pause import gc_paused

        class Node:
            pass

        kept = []
        with gc_paused(collect=True):
            a, b = Node(), Node()
            a.other, b.other = b, a
            gone = weakref.ref(a)
            del a, b
            kept.append(Node())
            assert gone() is not None       # no pass ran inside the block
        assert gone() is None and gc.isenabled() and len(kept) == 1
        """)


def test_what_the_block_kept_is_frozen_and_build_report_lets_it_go() -> None:
    """What an adapting pass kept is frozen when it ends (the first collection after it
    walked all of it for nothing); a report unfreezes it when its controls are measured, so
    that a process reporting again keeps no cycle of the last report for good."""
    _alone("""
        import gc
        from ls_agreement.adapters.gc_pause import gc_paused

        kept = []
        with gc_paused():
            kept.extend([i] for i in range(1000))
        assert gc.get_freeze_count() >= 1000
        assert gc.get_count()[0] < 1000          # nothing for the next pass to walk

        from ls_agreement.demo import data as demo_data
        from ls_agreement.plugin.report.build import build_report
        from ls_agreement.plugin.settings import ReportSettings
        users = {a.email: 10 + k for k, a in enumerate(demo_data.ANNOTATORS)}
        sample = demo_data.generate(users, seed=1, n_tasks=30)
        build_report(sample.config, [{"id": i + 1, **t} for i, t in enumerate(sample.tasks)],
                     ReportSettings(bootstrap=0))
        assert gc.get_freeze_count() == 0
        """)


def test_a_process_that_never_paused_keeps_what_it_froze() -> None:
    """A host application that froze its own start-up (gc.freeze after preloading) keeps it
    frozen through a report run beside other threads, where no pause is taken."""
    _alone("""
        import gc, threading
        from ls_agreement.adapters.gc_pause import gc_paused, thaw
        kept = [[i] for i in range(1000)]
        gc.freeze()
        frozen = gc.get_freeze_count()
        stop = threading.Event()
        other = threading.Thread(target=stop.wait)
        other.start()
        with gc_paused():
            pass
        thaw()
        stop.set()
        other.join()
        assert gc.get_freeze_count() == frozen
        """)
