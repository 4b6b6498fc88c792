"""A small deterministic post source for the posting lab's tests: user ``uK`` posts every
``period × (K + 1)`` lab seconds, at ``phase × K`` past each multiple (a pure function of its arguments)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field


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
