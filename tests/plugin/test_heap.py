"""plugin/live/heap.py: what a baseline freed leaves the process (glibc's malloc_trim)."""
from __future__ import annotations

import gc

import pytest

from ls_agreement.plugin.live.heap import _malloc_trim, release_freed_memory


def _rss() -> int:
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) * 1024 for line in fh if line.startswith("VmRSS:"))


@pytest.mark.skipif(_malloc_trim() is None, reason="the C library has no malloc_trim")
def test_freed_heap_pages_leave_the_process() -> None:
    """Blocks of 2 KB come from malloc's heap (above pymalloc's 512 bytes, below the mmap
    threshold); with every hundredth kept, the heap cannot shrink from its top, so the
    pages freed in between stay resident until they are handed back."""
    gc.collect()
    blocks = [bytes(2000) + bytes([k % 256]) for k in range(150_000)]      # about 300 MB
    keep = blocks[::100]
    del blocks
    gc.collect()
    before = _rss()
    assert release_freed_memory()
    after = _rss()
    assert before - after > 100 * 2 ** 20, (before, after)
    assert len(keep) == 1500
