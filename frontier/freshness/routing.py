"""Routing users to the Poisson or the Hash model, and the four user classes (digest §2.3, §3.1).

The paper gives no thresholds; these are the digest's recommendations, all parameters. With
``r`` the mean posts per local day over the last ``window_days`` (14):

- *instable* (class 2): the coefficient of variation of the daily counts exceeds ``cv_limit``
  (1.5) in a window holding at least ``burst_posts`` (10) posts, or a burst day (``burst_posts``
  or more) is followed by ``silent_days`` (3) silent days;
- *promoted*: at least ``hash_rate`` posts on each of the last ``promote_days`` (7) days;
- a user goes to Hash when promoted, or when ``r >= hash_rate`` (1/day) and it is not instable;
  once in Hash it stays there until demoted: two consecutive weeks each under ``hash_rate`` a day;
- classes: 1 inactive and 2 instable (Poisson), 3 constant and 4 authority (Hash,
  ``r >= authority_rate``, 24/day: about one post an hour).

``hash_all`` puts everyone in Hash (the paper's §6.2 experiment), ``poisson_all`` everyone in
Poisson (its §6.1 experiment).
"""

from __future__ import annotations

import enum
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

import numpy as np
import numpy.typing as npt

RoutingMode = Literal["paper", "hash_all", "poisson_all"]


class UserClass(enum.IntEnum):
    INACTIVE = 1
    INSTABLE = 2
    CONSTANT = 3
    AUTHORITY = 4

    @property
    def uses_hash(self) -> bool:
        return self >= UserClass.CONSTANT


@dataclass(frozen=True, slots=True)
class RoutingParams:
    """Thresholds of the routing (posts per local day unless said)."""

    mode: RoutingMode = "paper"
    hash_rate: float = 1.0
    authority_rate: float = 24.0
    window_days: int = 14
    promote_days: int = 7
    cv_limit: float = 1.5
    burst_posts: int = 10
    silent_days: int = 3

    def __post_init__(self) -> None:
        if self.mode not in ("paper", "hash_all", "poisson_all"):
            raise ValueError(f"routing.mode: must be paper, hash_all or poisson_all, not {self.mode!r}")
        for key in ("hash_rate", "authority_rate", "cv_limit"):
            if not getattr(self, key) > 0:
                raise ValueError(f"routing.{key}: must be above 0, not {getattr(self, key)!r}")
        for key in ("burst_posts", "silent_days", "promote_days"):
            if getattr(self, key) < 1:
                raise ValueError(f"routing.{key}: must be 1 or more, not {getattr(self, key)!r}")
        if self.window_days < max(self.promote_days, 14):
            raise ValueError(f"routing.window_days: must cover two weeks and promote_days, not {self.window_days!r}")


def is_instable(daily: Sequence[float] | npt.NDArray[np.float64], params: RoutingParams) -> bool:
    """Bursts then silence: a high coefficient of variation, or a burst day then silent days."""
    counts = np.asarray(daily, dtype=float)
    # a handful of posts always varies a lot from day to day: the coefficient of variation tells
    # bursts only once the window holds a burst's worth of posts (else an inactive user is instable)
    if counts.sum() >= params.burst_posts and counts.std() / counts.mean() > params.cv_limit:
        return True
    quiet = params.silent_days
    return any(counts[i] >= params.burst_posts and not counts[i + 1:i + 1 + quiet].any()
               for i in range(len(counts) - quiet))


def classify(daily: Sequence[int], current: UserClass | None, params: RoutingParams) -> UserClass:
    """The class of a user from its posts per local day over the last ``window_days`` (oldest first),
    given its class so far (None when new): Hash users leave Hash only when demoted."""
    counts = np.asarray(daily[-params.window_days:], dtype=float)
    rate = float(counts.mean()) if len(counts) else 0.0
    hash_class = UserClass.AUTHORITY if rate >= params.authority_rate else UserClass.CONSTANT
    if params.mode == "hash_all":
        return hash_class
    instable = is_instable(counts, params)
    poisson_class = UserClass.INSTABLE if instable else UserClass.INACTIVE
    if params.mode == "poisson_all":
        return poisson_class
    if current is not None and current.uses_hash:
        weeks = counts[-14:]
        demoted = len(weeks) == 14 and weeks[:7].mean() < params.hash_rate and weeks[7:].mean() < params.hash_rate
        return poisson_class if demoted else hash_class
    promoted = len(counts) >= params.promote_days and bool((counts[-params.promote_days:] >= params.hash_rate).all())
    return hash_class if promoted or (rate >= params.hash_rate and not instable) else poisson_class
