"""A small deterministic post source for the posting lab's tests: user ``uK`` posts every
``period × (K + 1)`` lab seconds, at ``phase × K`` past each multiple (a pure function of its
arguments); the ``--policy freshness`` model folder for its users, and what a crawl's WARC files hold of them."""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson
from warcio.archiveiterator import ArchiveIterator


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


def collected_posts(out: Path) -> tuple[defaultdict[str, set[float]], dict[str, float]]:
    """Each user's posts in the WARC files of every agent, and the lab time of its last crawl."""
    collected: defaultdict[str, set[float]] = defaultdict(set)
    last_crawl: dict[str, float] = {}
    for path in sorted((out / "warc").glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                uri = record.rec_headers.get_header("WARC-Target-URI") or ""
                if record.rec_type != "response" or "/timeline?" not in uri:
                    continue
                answer = orjson.loads(record.content_stream().read())
                collected[answer["user"]].update(p["time"] for p in answer["posts"])
                last_crawl[answer["user"]] = max(last_crawl.get(answer["user"], 0.0), answer["now"])
    return collected, last_crawl
