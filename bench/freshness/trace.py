"""The simulator's ground truth: every post of every user, and from when each user's record is complete.

Role: what the emulated API serves and what the metrics judge against (digest §6.2 items 2-3).
A trace comes from a generated :class:`~bench.invitro.posting.Population` or is replayed from a
CSV of ``user_id,unix_ts`` rows (header required; an optional ``class`` column gives the user's
class). A replayed corpus shaped like the paper's "last 2,000 messages per user" is
*left-truncated* for the users whose record hit the cap: their posts before the earliest stored
one are unknown, so ``known_from[user]`` is that earliest post and the metrics ignore the time
before it (§6.2 item 3). A post's identity is (user, its index in the user's ascending times).
"""

from __future__ import annotations

import csv
import math
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from bench.invitro.posting import Population

Floats = npt.NDArray[np.float64]
UNKNOWN_CLASS = 0


@dataclass(frozen=True, slots=True)
class Trace:
    """Invariant: ``posts[u]`` is ascending for every user in ``users``; ``classes`` and
    ``known_from`` have an entry for each of them (class 0 = unknown, -inf = complete record)."""

    users: list[str]
    posts: Mapping[str, Floats]
    classes: Mapping[str, int]
    known_from: Mapping[str, float]

    @classmethod
    def from_population(cls, population: Population, since: float, until: float) -> Trace:
        """The population's posts in [since, until); `since` is the start of the planners' history."""
        users = list(population.users)
        posts = {u: np.asarray(population.posts(u, since, until), dtype=np.float64) for u in users}
        classes = {u: population.user_class(u) for u in users}
        return cls(users, posts, classes, dict.fromkeys(users, -math.inf))

    @classmethod
    def from_rows(cls, rows: Iterable[tuple[str, float]], cap: int | None = None,
                  classes: Mapping[str, int] | None = None) -> Trace:
        """A trace from (user, time) pairs; with `cap`, a user holding `cap` posts or more is
        left-truncated at its earliest post."""
        times: dict[str, list[float]] = defaultdict(list)
        for user, ts in rows:
            times[user].append(ts)
        users = sorted(times)
        posts = {u: np.sort(np.asarray(times[u], dtype=np.float64)) for u in users}
        known_from = {u: float(posts[u][0]) if cap is not None and len(posts[u]) >= cap else -math.inf
                      for u in users}
        given = classes or {}
        return cls(users, posts, {u: given.get(u, UNKNOWN_CLASS) for u in users}, known_from)

    @classmethod
    def from_csv(cls, path: Path, cap: int | None = None) -> Trace:
        """A trace replayed from a ``user_id,unix_ts[,class]`` CSV with a header."""
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            missing = {"user_id", "unix_ts"} - set(reader.fieldnames or ())
            if missing:
                raise ValueError(f"{path}: the header lacks {', '.join(sorted(missing))} (needs user_id,unix_ts)")
            rows: list[tuple[str, float]] = []
            classes: dict[str, int] = {}
            for line, row in enumerate(reader, start=2):
                try:
                    rows.append((row["user_id"], float(row["unix_ts"])))
                    if row.get("class"):
                        classes[row["user_id"]] = int(row["class"])
                except ValueError as error:
                    raise ValueError(f"{path}:{line}: unix_ts or class is not a number: {error}") from None
        return cls.from_rows(rows, cap, classes)

    def history(self, start: float) -> dict[str, list[float]]:
        """What a planner is told before `start`: each user's known posts before it."""
        return {u: p[: int(np.searchsorted(p, start, side="left"))].tolist() for u, p in self.posts.items()}
