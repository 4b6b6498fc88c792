"""The crawling penalty ω and potentiality (digest §1, Definition 3 and Theorem 1; §6.3).

Potentiality is SHARC's blur adapted to one capture per user in an observation interval
``[0, T]``: the expected number of a user's messages between the capture at ``t_i`` and a query
time uniform in the interval. For a Poisson user it is ``λ·ω(t_i, T)/T`` with the penalty
``ω(t, T) = t² − tT + T²/2``, smallest in the middle of the interval; the organ pipe
(:mod:`frontier.freshness.poisson`) minimises the sum over users. Times here are relative to the
start of the interval, in any one unit.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def penalty(t: float, horizon: float) -> float:
    """ω(t, T) = t² − t·T + T²/2 for a capture at ``t`` in ``[0, T]`` (``T = nΔ`` in the paper)."""
    return t * t - t * horizon + horizon * horizon / 2


def potentiality(rate: float, t: float, horizon: float) -> float:
    """P(u, t, T) = λ·ω(t, T)/T: the Poisson model's expected blur of one capture at ``t``."""
    return rate * penalty(t, horizon) / horizon


def schedule_potentiality(rates: Sequence[float], times: Sequence[float], horizon: float) -> float:
    """Σ λ_i·ω(t_i, T)/T: the blur of capturing user i at ``times[i]`` (the objective Algorithm 1 minimises)."""
    lam = np.asarray(rates, dtype=float)
    t = np.asarray(times, dtype=float)
    return float(np.sum(lam * (t * t - t * horizon + horizon * horizon / 2)) / horizon)


def empirical_potentiality(posts: Sequence[float], crawl: float, horizon: float) -> float:
    """P̂ = (1/T)[Σ_{s ≤ τ} s + Σ_{s > τ} (T − s)] for the user's post times ``posts`` in ``[0, T]``
    and one capture at ``τ = crawl``: the time-average of |N(t) − N(τ)| over query times t (§6.3)."""
    s = np.asarray(posts, dtype=float)
    s = s[(s >= 0) & (s <= horizon)]
    before = s <= crawl
    return float((np.sum(s[before]) + np.sum(horizon - s[~before])) / horizon)
