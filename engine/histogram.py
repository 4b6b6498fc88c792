"""The histograms an agent observes into on its hot path (fetch latency, the todo filler's politeness
waits), and their buckets.

Kept apart from ``engine/metrics.py``, which renders them for Prometheus, so that an agent process
does not import prometheus-client (~0.05 CPU-s a start) to count: only the supervisor's control
API renders metrics. :meth:`Histogram.as_dict` names each bucket as the Prometheus text format does
(``0.005``, ``1.0``, ``+Inf``), so the supervisor can add agents' histograms up bucket by bucket and
render the sum.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from typing import Any

# seconds from the start of a fetch to its last byte
LATENCY_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
# seconds the todo filler sleeps because no host and IP are polite yet
WAIT_BUCKETS = (0.001, 0.01, 0.05, 0.1, 0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 30.0)


def bucket_name(bound: float) -> str:
    """A bucket's upper bound as the Prometheus text format writes it (Go's float formatting, which
    is Python's ``repr`` for bounds below 1e6)."""
    if bound == float("inf"):
        return "+Inf"
    if not 0 < bound < 1e6:
        raise ValueError(f"a histogram bound must lie in (0, 1e6), not {bound!r}")
    return repr(float(bound))


class Histogram:
    """Counts of observations per bucket: ``value <= bound``, and one bucket above the last bound."""

    __slots__ = ("bounds", "counts", "sum")

    def __init__(self, bounds: Sequence[float]) -> None:
        self.bounds = tuple(bounds)
        self.counts = [0] * (len(self.bounds) + 1)
        self.sum = 0.0

    def observe(self, value: float) -> None:
        self.counts[bisect_left(self.bounds, value)] += 1
        self.sum += value

    def as_dict(self) -> dict[str, Any]:
        """``{"counts": {"0.005": n, ..., "+Inf": n}, "sum": s}``: per bucket, not cumulative."""
        keys = [bucket_name(b) for b in (*self.bounds, float("inf"))]
        return {"counts": dict(zip(keys, self.counts)), "sum": self.sum}
