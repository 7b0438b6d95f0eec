"""Pausing Python's cyclic garbage collector while a large export is adapted, or a control measured.

Adapting keeps every value it builds (boxes, spans, their tuples: millions of tracked
objects on a large project) while it allocates and frees each task's parsed JSON. The
collector runs a full collection each time the live heap has grown by a quarter, and each
one walks every object kept so far: about a sixth of adapting's CPU on the 10,000-task demo
export (issue 24), spent finding nothing, since adapting makes no reference cycles (an
exception caught ``as exc`` is unbound when its block ends). Reference counting still frees
each task's JSON as soon as it is read, so memory does not grow. The collector's switch is
process-wide, so the pause is taken only when the caller's thread is the process's only
thread (the command line's ``report``): in a server (``serve``'s baseline thread beside
its web threads) another thread's garbage must not wait on an adapting pass, so there
adapting runs with the collector as it is.

When the block ends, what it built and kept is frozen (``gc.freeze``): left in the youngest
generation, the first collection after it walked all of it (3.9 s of CPU once the
100,000-task export is read). Frozen objects are still freed by reference counting; a
cycle among them would wait for :func:`thaw`, which ``build_report`` calls when the controls
are measured (a process that never paused is left as it is: ``gc.unfreeze`` is whole, and
a host application may have frozen its own start-up).

Measuring a control is the same story (tables kept for minutes, a full pass each time they
grow by a quarter; the 100,000-task report spends about 20 s of 255 s of CPU in the
collector), except that it may leave cycles: they are collected once at the end.
"""
from __future__ import annotations

import gc
import threading
from contextlib import contextmanager
from typing import Iterator

__all__ = ["gc_paused", "thaw"]

_froze: list[bool] = []     # whether a pause of this process froze what it kept


@contextmanager
def gc_paused(collect: bool = False) -> Iterator[None]:
    """Disable the cyclic collector for the block when this is the process's only thread;
    re-enable it after, only if it was on (a caller that switched it off keeps it off).

    ``collect``: the block may leave reference cycles (measuring a control builds pandas
    objects, some of which refer to themselves): they are collected once when it ends, in
    one pass over the youngest generation, where everything the block made and kept still
    sits, since no collection promoted it (its garbage, not the whole heap, is walked)."""
    if threading.active_count() > 1:
        yield
        return
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if not collect:
            # what the block built and kept sits in the youngest generation, and the first
            # collection after it would walk all of it for nothing (3.9 s of CPU after the
            # 100,000-task export is read): frozen, it is never walked; reference counting
            # still frees it
            gc.freeze()
            _froze[:] = [True]
        if was_on:
            gc.enable()
        if collect:
            gc.collect(0)


def thaw() -> None:
    """Give what the pauses of this process froze back to the collector (nothing if none
    froze)."""
    if _froze:
        gc.unfreeze()
        _froze.clear()
