"""engine/heap.py: memory freed among long-lived objects goes back to the system once given back."""

from __future__ import annotations

import subprocess
import sys

import pytest

# 200 MB of 2 KB blocks (each its own malloc), one in a hundred kept: the rest is free memory inside
# the heap, which glibc does not return by itself
FRAGMENTED_HEAP = """
from engine import heap
def anon():
    return next(int(line.split()[1]) for line in open("/proc/self/status") if line.startswith("RssAnon")) // 1024
blocks = [bytes(2000) for _ in range(100_000)]
kept = blocks[::100]
del blocks
before = anon()
if {give_back}:
    heap.give_back()
print(before, anon())
"""


def resident_mib(give_back: bool) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", FRAGMENTED_HEAP.format(give_back=give_back)],
                          capture_output=True, text=True, check=True)
    before, after = map(int, done.stdout.split())
    return before, after


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc and /proc")
def test_freed_memory_inside_the_heap_goes_back_only_when_given_back() -> None:
    before, kept = resident_mib(give_back=False)
    assert before > 150 and kept > 150  # glibc sat on it
    before, after = resident_mib(give_back=True)
    assert before > 150 and after < 50
