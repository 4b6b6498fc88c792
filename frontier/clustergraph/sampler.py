"""The random webpage sampler (Alg. 1, digest §2.2): which page the training crawl fetches next.

A pure state machine: the caller (``crawl learn``) fetches and reports; this module reads and
writes nothing outside its own memory, reads no clock and draws from its own seeded
generator, so one seed and one sequence of answers give one sample.

State: U (the queue) with, per URL, s (the probability it was already sampled), r = 1 − s and
p = ξ − s (its remaining sampling probability); V (drawn, in order) and W (withdrawn). U lives
in numpy arrays (``_s``, ``_r``, ``_p`` and the aligned list ``_urls``) with swap-remove for
the drawn URL, so a round costs a few vector operations over U.

Order of a round. ``draw()`` does the whole of a round that depends on the draw: it picks
u_k with probability q_k = p_k / P, moves it to V and updates every other queued URL with
this round's q (s += r·q, r ·= 1 − q, p ·= 1 − r/P, the last an identity of the digest that
keeps p positive without cancellation), withdrawing those whose p reaches 0, i.e. those with
r ≥ P (never re-admitted). ``record(url, outlinks)`` then adds the new outlinks (not in U, V
or W) with s = 0, r = 1, p = ξ. Alg. 1 computes X before the update and adds it after;
doing the update first is the same, because the update never touches X and a URL it
withdraws lands in W, which X excludes either way. This order also lets a caller draw a
small batch before recording any of it (the configurable approximation of §2.2).

A failed fetch is recorded with ``outlinks=None``: it stays in V, adds nothing and does not
count as sampled. When U is empty, ``draw()`` re-seeds U from W (s = 0, r = 1) and counts it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]


def xi_for(mean_out_degree: float, alpha: int | None = None) -> float:
    """ξ = 1/K̄ + (1 − 1/K̄)/α, α = round(K̄) − 1 by default (ξ = 2/K̄), clamped into [1/K̄, 1]."""
    if mean_out_degree <= 1:
        return 1.0
    if alpha is None:
        alpha = round(mean_out_degree) - 1
    if alpha <= 0:
        return 1.0
    floor = 1 / mean_out_degree
    return min(1.0, max(floor, floor + (1 - floor) / alpha))


@dataclass(frozen=True)
class SamplerState:
    """A copy of the queue for checks: URLs of U with their s, r and p, and the sizes of V and W."""

    urls: tuple[str, ...]
    s: FloatArray
    r: FloatArray
    p: FloatArray
    visited: int
    withdrawn: int

    @property
    def total(self) -> float:
        """P = Σ p over U."""
        return float(self.p.sum())


class Sampler:
    """Alg. 1 as a state machine: ``draw()`` → fetch → ``record()``.

    Invariants: U, V and W are disjoint; V has no repeats; s + r = 1 and p = ξ − s > 0 for
    every URL in U; a withdrawn URL enters U again only by a re-seed.
    """

    def __init__(self, seeds: Sequence[str], xi: float, seed: int = 0) -> None:
        if not 0 < xi <= 1:
            raise ValueError(f"xi must be in (0, 1], not {xi}")
        self.xi = xi
        self._rng = np.random.default_rng(seed)
        self._urls: list[str] = []
        self._queued: set[str] = set()
        self._s: FloatArray = np.zeros(64)
        self._r: FloatArray = np.zeros(64)
        self._p: FloatArray = np.zeros(64)
        self._q: FloatArray = np.zeros(64)
        self._work: FloatArray = np.zeros(64)
        self.visited: list[str] = []
        self._visited: set[str] = set()
        self._pending: set[str] = set()
        self._withdrawn: set[str] = set()
        self.sampled = 0
        """Successful records: the pages that count toward the sample size."""
        self.withdrawn = 0
        """URLs moved from U to W, over the whole run."""
        self.reseeds = 0
        self._add(list(dict.fromkeys(seeds)))

    def __repr__(self) -> str:
        return (f"<Sampler xi={self.xi:.4f} queued={len(self._urls)} visited={len(self.visited)} "
                f"sampled={self.sampled} withdrawn={self.withdrawn} reseeds={self.reseeds}>")

    @property
    def queued(self) -> int:
        return len(self._urls)

    def state(self) -> SamplerState:
        size = len(self._urls)
        return SamplerState(tuple(self._urls), self._s[:size].copy(), self._r[:size].copy(),
                            self._p[:size].copy(), len(self.visited), len(self._withdrawn))

    def is_withdrawn(self, url: str) -> bool:
        return url in self._withdrawn

    def draw(self) -> str | None:
        """The next URL to fetch (now in V), the round's update applied; None when U and W are empty."""
        if not self._urls:
            if not self._withdrawn:
                return None
            self.reseeds += 1
            self._add(sorted(self._withdrawn))
            self._withdrawn.clear()
        size = len(self._urls)
        p, r, s = self._p[:size], self._r[:size], self._s[:size]
        q, work = self._q[:size], self._work[:size]  # scratch: no array allocated per round
        np.cumsum(p, out=work)
        total = float(work[-1])
        k = min(int(np.searchsorted(work, self._rng.random() * total, side="right")), size - 1)
        url = self._urls[k]
        # p' = p·(1 − r/P) ≤ 0 exactly when r ≥ P, decided before r changes; r ≤ 1, so only when P ≤ 1
        withdraw = r >= total if total <= 1 else None
        np.divide(p, total, out=q)
        np.divide(r, -total, out=work)
        work += 1.0
        p *= work
        np.multiply(r, q, out=work)
        s += work
        np.subtract(1.0, q, out=q)
        r *= q
        self._remove(k)
        if withdraw is not None:
            withdraw[k] = False
            if withdraw.any():
                self._withdraw(withdraw, k)
        self.visited.append(url)
        self._visited.add(url)
        self._pending.add(url)
        return url

    def record(self, url: str, outlinks: Sequence[str] | None) -> None:
        """What fetching a drawn ``url`` gave: its in-scope outlinks, or None for a failed fetch."""
        if url not in self._pending:
            raise ValueError(f"{url} was not drawn, or was recorded already")
        self._pending.discard(url)
        if outlinks is None:
            return
        self.sampled += 1
        known = self._queued, self._visited, self._withdrawn
        self._add([link for link in dict.fromkeys(outlinks) if not any(link in group for group in known)])

    def _add(self, urls: list[str]) -> None:
        start = len(self._urls)
        end = start + len(urls)
        if end > len(self._p):
            capacity = max(end, 2 * len(self._p))
            self._s, self._r, self._p = (np.resize(array, capacity) for array in (self._s, self._r, self._p))
            self._q, self._work = np.zeros(capacity), np.zeros(capacity)
        self._s[start:end], self._r[start:end], self._p[start:end] = 0.0, 1.0, self.xi
        self._urls.extend(urls)
        self._queued.update(urls)

    def _remove(self, k: int) -> None:
        """Swap-remove position ``k`` of U (the last entry takes its place)."""
        last = len(self._urls) - 1
        self._queued.discard(self._urls[k])
        for array in (self._s, self._r, self._p):
            array[k] = array[last]
        self._urls[k] = self._urls[last]
        self._urls.pop()

    def _withdraw(self, withdraw: npt.NDArray[np.bool_], k: int) -> None:
        """Move the flagged URLs (flags from before ``_remove(k)``) to W and compact U."""
        last = len(withdraw) - 1
        withdraw[k] = withdraw[last]  # follow the swap-remove of k
        keep = ~withdraw[:last]
        gone = [url for url, flag in zip(self._urls, withdraw[:last]) if flag]
        self._withdrawn.update(gone)
        self._queued.difference_update(gone)
        self.withdrawn += len(gone)
        size = int(keep.sum())
        for array in (self._s, self._r, self._p):
            array[:size] = array[:last][keep]
        self._urls = [url for url, kept in zip(self._urls, keep) if kept]
