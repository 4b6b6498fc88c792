"""Splitting users over agents with balanced workload (digest §4.1, §4.2).

The *workload* of a part is the sum of its users' post frequencies. Two ways:

- the RR ("Round-and-Robin") split of the organ pipe: agent m takes every position j with
  ``j mod M = m``. O(N); every part is again an organ pipe, and for frequencies in arithmetic
  progression the 2-way gap is bounded by one term (Equation 1). :func:`halving_partition` is
  the paper's recursive doubling (2 → 4 → 8 parts), the same sets as ``mod`` with labels
  bit-reversed;
- set division: recursive bisection, each level an exact subset sum (a bitset dynamic
  programme over frequencies scaled to integers) aiming at the share of the sum the half's
  agents should carry, with Karmarkar–Karp differencing (equal halves) or a greedy fill
  (unequal ones) when the table would exceed ``max_cells`` bits.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from typing import TypeVar

T = TypeVar("T")
MAX_CELLS = 50_000_000


def rr_partition(order: Sequence[T], parts: int) -> list[list[T]]:
    """Part m holds the positions j of ``order`` with ``j mod parts = m``, in order."""
    if parts < 1:
        raise ValueError(f"parts: must be 1 or more, not {parts!r}")
    return [list(order[m::parts]) for m in range(parts)]


def halving_partition(order: Sequence[T], parts: int) -> list[list[T]]:
    """The paper's recursive doubling: split each part by alternate positions until ``parts`` (a power of 2)."""
    if parts < 1 or parts & (parts - 1):
        raise ValueError(f"parts: recursive halving needs a power of 2, not {parts!r}")
    current = [list(order)]
    while len(current) < parts:
        current = [half for part in current for half in (part[0::2], part[1::2])]
    return current


def subset_sum(values: Sequence[int], target: int) -> list[int]:
    """Exact: the indices of a subset of ``values`` (non-negative) with the largest sum <= ``target``."""
    reachable = [1]  # reachable[i]: bitset of the sums of subsets of the first i values
    mask = (1 << (target + 1)) - 1
    for v in values:
        reachable.append((reachable[-1] | (reachable[-1] << v)) & mask)
    best = reachable[-1].bit_length() - 1
    chosen = []
    for i in range(len(values), 0, -1):
        if not reachable[i - 1] >> best & 1:  # best is not reachable without value i-1: take it
            chosen.append(i - 1)
            best -= values[i - 1]
    return sorted(chosen)


def karmarkar_karp(values: Sequence[float]) -> list[int]:
    """Largest differencing: the indices of one side of a near-equal 2-way split."""
    heap: list[tuple[float, int, list[int], list[int]]] = [(-v, i, [i], []) for i, v in enumerate(values)]
    heapq.heapify(heap)
    while len(heap) > 1:
        d1, k, a1, b1 = heapq.heappop(heap)
        d2, _, a2, b2 = heapq.heappop(heap)
        heapq.heappush(heap, (d1 - d2, k, a1 + b2, b1 + a2))  # the larger difference's sides take the other's opposite
    return sorted(heap[0][2]) if heap else []


def _greedy_fill(values: Sequence[float], target: float) -> list[int]:
    chosen, total = [], 0.0
    for i in sorted(range(len(values)), key=lambda i: -values[i]):
        if total + values[i] <= target:
            chosen.append(i)
            total += values[i]
    return sorted(chosen)


def bisect(values: Sequence[float], share: float, scale: float = 100.0, max_cells: int = MAX_CELLS) -> list[int]:
    """The indices of a subset whose sum is closest below ``share`` of the total (0 < share <= ½)."""
    scaled = [round(v * scale) for v in values]
    target = int(sum(scaled) * share)
    if len(values) * (target + 1) <= max_cells:
        return subset_sum(scaled, target)
    return karmarkar_karp(values) if share == 0.5 else _greedy_fill(values, sum(values) * share)


def set_division(values: Sequence[float], parts: int, scale: float = 100.0,
                 max_cells: int = MAX_CELLS) -> list[list[int]]:
    """Recursive bisection into ``parts`` sets of indices of ``values`` with near-equal sums."""
    if parts < 1:
        raise ValueError(f"parts: must be 1 or more, not {parts!r}")

    def split(indices: list[int], k: int) -> list[list[int]]:
        if k == 1:
            return [indices]
        low = k // 2
        side = set(bisect([values[i] for i in indices], low / k, scale, max_cells))
        first = [i for j, i in enumerate(indices) if j in side]
        rest = [i for j, i in enumerate(indices) if j not in side]
        return split(first, low) + split(rest, k - low)

    return split(list(range(len(values))), parts)


def workloads(values: Sequence[float], parts: Sequence[Sequence[int]]) -> list[float]:
    """Each part's workload: the sum of ``values`` at its indices."""
    return [sum(values[i] for i in part) for part in parts]
