"""A small deterministic post source for the posting lab's tests: user ``uK`` posts every
``period × (K + 1)`` lab seconds, at ``phase × K`` past each multiple (a pure function of its
arguments); and the ``--policy freshness`` model folder for its users."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path


@dataclass(frozen=True)
class RegularPosters:
    count: int
    period: float = 600.0
    phase: float = 7.0
    users: list[str] = field(init=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "users", [f"u{k}" for k in range(self.count)])

    def posts(self, user: str, start: float, end: float) -> list[float]:
        k = int(user[1:])
        every, offset = self.period * (k + 1), self.phase * k
        first = math.ceil((start - offset) / every)
        times = []
        n = first
        while (t := n * every + offset) < end:
            times.append(t)
            n += 1
        return times


def write_model(model: Path, directory: str, users: Sequence[str], history: Mapping[str, Sequence[float]]) -> Path:
    """``model/users.csv`` (each user's listing under the lab's ``directory``) and ``model/history.csv``."""
    model.mkdir()
    (model / "users.csv").write_text("user_id,url\n" + "".join(
        f"{u},{directory}timeline?count=20&user={u}\n" for u in users))
    (model / "history.csv").write_text("user_id,unix_ts\n" + "".join(
        f"{u},{t!r}\n" for u in users for t in history[u]))
    return model
