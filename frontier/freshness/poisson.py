"""The Poisson model and Algorithm 1, the organ pipe (digest §2.4 and §3.2).

A class 1–2 user posts as a Poisson process of rate λ: ``λ·(t2 − t1)`` messages expected in a
window. λ is the posts in the observed window over its length, shrunk toward the population's
mean by a Gamma(α, β) prior, ``λ̂ = (N + α)/(|window| + β)``, so a user with little or no history
gets a usable rate. Visiting N users once each in a period at evenly spaced instants, the sum of
``λ_i·ω(t_i)`` is least when the rates, sorted ascending, are laid out as an organ pipe: the
largest in the middle, the smallest at both ends (the rearrangement inequality). The paper's
printed Algorithm 1 is wrong (digest §7, A1); this is the corrected form, and its closed form.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TypeVar

import numpy as np
import numpy.typing as npt

Count = TypeVar("Count", float, npt.NDArray[np.float64])


@dataclass(frozen=True, slots=True)
class GammaPrior:
    """The prior on a user's rate: mean ``posts/seconds`` weighing as much as ``seconds`` of history."""

    posts: float
    seconds: float

    @classmethod
    def population(cls, total_posts: int, users: int, window: float, weight: float, default_rate: float) -> GammaPrior:
        """The prior whose mean is the population's rate (``default_rate`` when there is none to read)."""
        rate = total_posts / (users * window) if users and window > 0 and total_posts else default_rate
        return cls(posts=rate * weight, seconds=weight)

    def rate(self, posts: Count, window: Count) -> Count:
        """λ̂ = (N + α)/(|window| + β), posts per second (for one user, or for arrays of them)."""
        rate: Count = (posts + self.posts) / (np.maximum(window, 0.0) + self.seconds)
        return rate


def organ_pipe(ascending: Sequence[int]) -> list[int]:
    """Algorithm 1, corrected: the crawl order ``D`` of users given sorted by ascending rate.

    The i-th user goes to the front half at i/2 when i is even, to the back half at N−1−(i−1)/2
    when odd, so the order rises to the middle and falls again.
    """
    n = len(ascending)
    order = [0] * n
    for i, user in enumerate(ascending):
        order[i // 2 if i % 2 == 0 else n - 1 - (i - 1) // 2] = user
    return order


def organ_pipe_position(j: int, n: int) -> int:
    """The closed form ``f^D``: the index (in ascending order) of the user at position ``j`` of ``n``."""
    return 2 * j if j < (n + 1) // 2 else 2 * (n - j) - 1


def slot_times(n: int, begin: float, period: float) -> list[float]:
    """The visit instants of ``n`` users spread over a period: ``begin + (j + ½)·period/n``."""
    return [begin + (j + 0.5) * period / n for j in range(n)]
