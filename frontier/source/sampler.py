"""SOUrCe's training sampler (digest §2.5, resolution A9): which page the learning crawl fetches next.

A pure state machine, like :mod:`frontier.clustergraph.sampler`: the caller fetches and reports,
this module decides. ``next_url()`` → fetch → ``record()`` (an HTML page) or ``failed()``
(anything else); ``sample()`` gives the outputs the learner needs: D, U and the
requested → final mapping. No clock, no I/O; randomness comes only from the ``random.Random``
given (or built from an integer seed), so one seed and one sequence of answers give one sample.

Mode ``"source"`` (the paper's): a FIFO queue from the entry URL(s); from each fetched page, one
link per Apath is drawn at random among the group's links not seen yet (A9: choosing among
unseen links only covers more), marked seen and enqueued; the whole group is kept as U_{p,x}.
Mode ``"bfs"`` (the §5.5 ablation): every unseen link of every group is enqueued, in group then
document order; U is recorded the same way.

Choices the digest leaves open (ours):
- The random pick is over the group's unseen *anchors*, duplicates included, as in the digest's
  pseudocode: a URL linked twice from one position is twice as likely to be drawn.
- Groups are visited in the order of the mapping given (``link_groups`` builds it in document
  order), which fixes the FIFO order among one page's picks.
- A fetch still pending counts against |D|: ``next_url()`` gives nothing once
  |D| + pending = size, so a caller drawing a batch before recording it never overshoots; a
  pending fetch that fails frees its place again.
- Redirects (§2.4): the final URL counts as seen, so no group ever picks it. A queued URL that a
  redirect has meanwhile fetched is dropped from the queue when it comes up, not fetched again.
  A redirect landing on a page already in D is not a new page: D stays free of repeats, U is not
  recorded twice, and only the requested → final mapping is kept, because it still labels the
  links to the requested URL.
- A URL is never drawn twice, even when its first fetch failed.
"""

from __future__ import annotations

import random
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, get_args

SamplingMode = Literal["source", "bfs"]
Groups = Mapping[str, Sequence[str]]
"""Apath → the URLs of its anchors on one page, in document order, duplicates kept."""


@dataclass(frozen=True)
class Sample:
    """The learning sample: what the clusterer and the navigation table are built from."""

    pages: tuple[str, ...]
    """D: the final URL of every page recorded, in fetch order, no repeats."""
    links: Mapping[str, Mapping[str, tuple[str, ...]]]
    """U: page (final URL) → Apath → U_{p,x}, as given to ``record``."""
    final_of: Mapping[str, str]
    """Requested URL → final URL in D, for every fetch that gave a page (identity when not redirected)."""


class SourceSampler:
    """Digest §2.5's ``sample`` loop as a state machine.

    Invariants: no URL is handed out twice; D has no repeats and never more than ``size``
    entries; URLs are handed out in the order they were enqueued.
    """

    def __init__(self, entries: Sequence[str], size: int, rng: random.Random | int = 0,
                 mode: SamplingMode = "source") -> None:
        if size < 1:
            raise ValueError(f"size must be at least 1, not {size}")
        if mode not in get_args(SamplingMode):
            raise ValueError(f"mode must be one of {get_args(SamplingMode)}, not {mode!r}")
        self.size = size
        self.mode = mode
        self._rng = rng if isinstance(rng, random.Random) else random.Random(rng)
        unique = list(dict.fromkeys(entries))
        self._queue: deque[str] = deque(unique)
        self._seen: set[str] = set(unique)
        self._pending: set[str] = set()
        self._pages: list[str] = []
        self._fetched: set[str] = set()
        self._links: dict[str, dict[str, tuple[str, ...]]] = {}
        self._final_of: dict[str, str] = {}

    def __repr__(self) -> str:
        return (f"<SourceSampler mode={self.mode} pages={len(self._pages)}/{self.size} "
                f"queued={len(self._queue)} pending={len(self._pending)}>")

    @property
    def queued(self) -> tuple[str, ...]:
        """The queue, head first."""
        return tuple(self._queue)

    def next_url(self) -> str | None:
        """The next URL to fetch, or None when nothing can be fetched now: the queue is empty or
        |D| + pending fetches reached ``size``. With no fetch pending, None means the sample is done."""
        if len(self._pages) + len(self._pending) >= self.size:
            return None
        while self._queue:
            url = self._queue.popleft()
            if url not in self._fetched:  # else a redirect already brought this page into D
                self._pending.add(url)
                return url
        return None

    def record(self, url: str, final_url: str, groups: Groups) -> None:
        """A fetch of ``url`` gave an HTML page at ``final_url`` (after redirects) with these link groups."""
        self._settle(url)
        self._seen.add(final_url)
        self._final_of[url] = final_url
        if final_url in self._fetched:
            return
        self._pages.append(final_url)
        self._fetched.add(final_url)
        self._links[final_url] = {apath: tuple(urls) for apath, urls in groups.items()}
        for urls in groups.values():
            self._enqueue(urls)

    def failed(self, url: str) -> None:
        """A fetch of ``url`` failed or gave no HTML: it is not part of D and adds nothing."""
        self._settle(url)

    def sample(self) -> Sample:
        """D, U and the requested → final mapping so far (copies: the sampler may go on)."""
        return Sample(tuple(self._pages), {page: dict(groups) for page, groups in self._links.items()},
                      dict(self._final_of))

    def _settle(self, url: str) -> None:
        if url not in self._pending:
            raise ValueError(f"{url} was not handed out, or was reported already")
        self._pending.discard(url)

    def _enqueue(self, urls: Sequence[str]) -> None:
        """One group's contribution to the queue: one random unseen anchor, or every unseen link in BFS mode."""
        unseen = [url for url in urls if url not in self._seen]
        if not unseen:
            return
        chosen = [self._rng.choice(unseen)] if self.mode == "source" else list(dict.fromkeys(unseen))
        self._seen.update(chosen)
        self._queue.extend(chosen)
