"""Giving freed memory back to the system: glibc's allocator told not to sit on it (agents only).

An agent's heap holds long-lived small objects (visit states, queued URLs, robots.txt rules)
with large short-lived buffers coming and going among them: a checkpoint (tens of MB built
and written every ``engine.checkpoint_interval``), a WARC file's index sorted at rotation,
bodies. glibc keeps what such buffers free. Its mmap threshold grows to the size of the largest
block freed (up to 32 MiB), so later buffers of that size come from the heap instead of fresh
mappings, and it trims the heap's top only beyond twice that threshold; freed pages inside the
heap it never returns by itself. The soak benchmark (``bench/soak.py``) saw an agent's memory
climb by steps at checkpoints; ``malloc_trim(0)`` called from outside on that agent took its
resident memory from 500 to 410 MB at once: 90 MB it held and did not use.

So each agent, at start, fixes the mmap threshold (:func:`keep_buffers_out_of_the_heap`: large
buffers always get mappings of their own, which go back to the system when freed), and after
each checkpoint calls ``malloc_trim(0)`` (:func:`give_back`: free pages anywhere in the heap
are returned). With another C library (musl) both do nothing.
"""

from __future__ import annotations

import ctypes
import ctypes.util

M_MMAP_THRESHOLD = -3  # mallopt's parameter number in glibc's malloc.h
MMAP_THRESHOLD = 256 * 1024  # glibc's starting value is 128 KiB; fixed, it no longer grows

_libc = ctypes.CDLL(ctypes.util.find_library("c") or None)
_mallopt = getattr(_libc, "mallopt", None)
_malloc_trim = getattr(_libc, "malloc_trim", None)


def keep_buffers_out_of_the_heap() -> bool:
    """Fix glibc's mmap threshold; True if the allocator took it."""
    return _mallopt is not None and bool(_mallopt(M_MMAP_THRESHOLD, MMAP_THRESHOLD))


def give_back() -> bool:
    """Return the heap's free pages to the system; True if any were."""
    return _malloc_trim is not None and bool(_malloc_trim(0))
