"""engine/heap.py: memory freed among long-lived objects goes back to the system once given back."""

from __future__ import annotations

import subprocess
import sys

import pytest

from engine import heap

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


# ISA-L's deflate allocates ~260 KiB of state for each record and frees it; counted in page faults
DEFLATES = """
import os, resource
from isal import isal_zlib
from engine import heap
heap.keep_buffers_out_of_the_heap()
body = os.urandom(4096).hex().encode()
isal_zlib.compress(body, 1, 31)
before = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
for _ in range(200):
    isal_zlib.compress(body, 1, 31)
print(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - before)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc")
def test_a_records_deflate_state_is_taken_from_the_heap_again_not_mapped_afresh() -> None:
    """With an agent's thresholds, the state a WARC record's deflate allocates and frees is reused from the
    heap; at a threshold below its size (256 KiB, before) each of a page's three records mapped it afresh,
    faulted its pages in (~9 faults a record: 1,800 here) and unmapped it."""
    done = subprocess.run([sys.executable, "-c", DEFLATES], capture_output=True, text=True, check=True)
    assert int(done.stdout) < 50


# Allocations counted by the collector: kept lists (no collection can free them), then cycles dropped
# at once; prints the young collections during the first, and how many of the cycles are still alive
# after the second, with no gc.collect() called
COLLECTOR = """
import gc, weakref
from engine import heap
if {tuned}:
    heap.collect_less_often()
young = []
gc.callbacks.append(lambda phase, info: young.append(1) if phase == "start" and info["generation"] == 0 else None)
gc.collect()
young.clear()
kept = [[] for _ in range(15_000)]
while_kept = len(young)

class Node:
    pass

def cycle():
    a, b = Node(), Node()
    a.other, b.other = b, a
    return weakref.ref(a)

refs = [cycle() for _ in range(100_000)]  # each pair is garbage as soon as made
print(while_kept, sum(r() is not None for r in refs))
"""


def collector(tuned: bool) -> tuple[int, int]:
    done = subprocess.run([sys.executable, "-c", COLLECTOR.format(tuned=tuned)], capture_output=True, text=True, check=True)
    young, alive = map(int, done.stdout.split())
    return young, alive


def test_the_collector_looks_less_often_and_still_frees_cycles() -> None:
    young, alive = collector(tuned=False)
    assert young >= 15  # CPython's default: a young collection every 700 allocations
    young, alive = collector(tuned=True)
    assert young == 0  # 15,000 allocations: under the agent's threshold
    assert alive <= heap.YOUNG_THRESHOLD  # at most one young generation's worth of cycles waits for its turn
