"""What a crawl learns as it goes about the links of each anchor role: do their downloads bring anything new? (ours)

Why: the navigation table is learnt on a sample and scores a link by the clusters its row led
to there. Where a cluster holds pages of two kinds (the lab's blog: a layout's empty calendar
days with its tag lists and reply forms; its print views with its posts), no row separates
them, yet the links of one anchor role may lead to the useless kind only (``calendar-nav``,
``reply``, ``print``). And one host may answer a role's links with redirects only (the blog's
``www`` answers comment authors' old-scheme links ``www/~NAME/``, while the same role's links
elsewhere reach journals). The crawl sees both as it downloads: a page that carries no text
it has not seen before, or no page at all, is a download that brought nothing.

* :func:`text_blocks`: the digests of a page's longer text segments (``MIN_BLOCK`` characters
  and more, whitespace collapsed, under ``<body>``): what users write runs long (posts,
  comments, bios), while a template's text (menus, labels, dates, names) runs short, so a
  page of user content carries at least one block no earlier page had, and an empty listing,
  a form or a second view of a page already fetched carries none.
* :class:`SeenBlocks`: the blocks of the pages fetched so far, in a scalable Bloom filter
  (Almeida et al.: a filter of ``BLOCKS_PER_FILTER`` blocks, another when it is full, each
  with half the false-positive rate of the one before, 0.5% for the first, so that all of
  them together stay under 1%): ~1.2–2 MB a million blocks, ~15 bytes a page where a set of
  digests took ~1 KB, so a crawl of millions of pages can ask. A false positive makes a new
  block look seen, so a page with one new block may count as nothing new, under one time in
  a hundred.
* :class:`RoleYield`: per anchor role, and per (host, role), the downloads and how many of
  them brought something new. A role's share is (prior + new) / (prior + downloads), 1
  before its first download; a host's share for a role is the Beta update of that role's
  share by the host's own downloads of it, the role's share weighing ``host_prior``
  downloads: (host_prior·s_role + new) / (host_prior + downloads); a host the role has not
  been downloaded from takes the role's share. The factor that multiplies a link's score is
  the share over ``enough``, at most 1; ``enough`` = 1 (the default) makes it the share
  itself, a smaller one lets a role keep its whole score while that share of its downloads
  or more bring something new (measured on the lab's blog at 0.5: the print views, 70% of
  whose downloads carry text segments of their own since the view re-renders the post,
  then kept their score, and the crawl for UCC fetched 60 of them, VR 0.985 against 0.996).

Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

import numpy as np
import pybloomfilter  # pybloomfiltermmap3 has no stubs: pyproject.toml lets it be Any
from lxml import etree

from frontier.source.navigation import FloatArray

if TYPE_CHECKING:
    from lxml.etree import _Element

__all__ = ["MIN_BLOCK", "RoleYield", "SeenBlocks", "text_blocks"]

MIN_BLOCK = 40
"""Characters a text segment needs to count as content (the lab's template strings, names and dates
are shorter; its users' sentences longer: empty calendar days carry no segment of 40 and more)."""


def text_blocks(root: _Element, min_chars: int = MIN_BLOCK) -> frozenset[bytes]:
    """16-byte digests of the text segments of ``root``'s ``<body>`` (every element's text and tail,
    whitespace collapsed) of at least ``min_chars`` characters; none for a page without a body."""
    found = set()
    for body in root.iterchildren("body"):
        for element in body.iter(etree.Element):  # comments and processing instructions are no text
            for text in (element.text, element.tail if element is not body else None):
                if text and len(text) >= min_chars:
                    segment = " ".join(text.split())
                    if len(segment) >= min_chars:
                        found.add(hashlib.blake2b(segment.encode(), digest_size=16).digest())
    return frozenset(found)


BLOCKS_PER_FILTER = 1 << 20
FIRST_ERROR_RATE = 0.005


class SeenBlocks:
    """The text blocks of the pages fetched so far, approximately (Bloom filters in memory, no file)."""

    def __init__(self, blocks_per_filter: int = BLOCKS_PER_FILTER) -> None:
        self.blocks_per_filter = blocks_per_filter
        self._filters = [pybloomfilter.BloomFilter(blocks_per_filter, FIRST_ERROR_RATE)]
        self._in_last = 0

    def add(self, blocks: Iterable[bytes]) -> bool:
        """Remember ``blocks``; True if one of them was not seen before."""
        new = False
        for block in blocks:
            if any(block in f for f in self._filters):
                continue
            new = True
            if self._in_last == self.blocks_per_filter:
                rate = FIRST_ERROR_RATE / 2 ** len(self._filters)
                self._filters.append(pybloomfilter.BloomFilter(self.blocks_per_filter, rate))
                self._in_last = 0
            self._filters[-1].add(block)
            self._in_last += 1
        return new


class RoleYield:
    """Downloads and new downloads per anchor role (by index) and per (host, role) (module docstring)."""

    def __init__(self, roles: int, prior: float = 1.0, host_prior: float = 2.0, enough: float = 1.0) -> None:
        if prior <= 0 or host_prior <= 0 or not 0 < enough <= 1:
            raise ValueError(f"the priors must be above 0 and enough in (0, 1], not {prior}, {host_prior}, {enough}")
        self.prior, self.host_prior, self.enough = prior, host_prior, enough
        self.downloads = np.zeros(roles)
        self.new = np.zeros(roles)
        self._hosts: dict[tuple[str, int], list[int]] = {}  # (host, role) → [downloads, new]

    def record(self, role: int, host: str, new: bool) -> None:
        """One download of a link of ``role`` on ``host``, which brought something new or not."""
        self.downloads[role] += 1
        self.new[role] += new
        counts = self._hosts.setdefault((host, role), [0, 0])
        counts[0] += 1
        counts[1] += new

    def role_share(self, role: int) -> float:
        """(prior + new) / (prior + downloads) of one role."""
        return float((self.prior + self.new[role]) / (self.prior + self.downloads[role]))

    def share(self, role: int, host: str) -> float:
        """The role's share updated by the host's own downloads of it (module docstring)."""
        of_role = self.role_share(role)
        counts = self._hosts.get((host, role))
        if counts is None:
            return of_role
        return float((self.host_prior * of_role + counts[1]) / (self.host_prior + counts[0]))

    def role_factors(self) -> FloatArray:
        """Per role, its share over ``enough``, at most 1."""
        return np.minimum(1.0, (self.prior + self.new) / (self.prior + self.downloads) / self.enough)

    def role_factor(self, role: int) -> float:
        return min(1.0, self.role_share(role) / self.enough)

    def factor(self, role: int, host: str) -> float:
        """The role's share on ``host`` over ``enough``, at most 1."""
        return min(1.0, self.share(role, host) / self.enough)

    def to_data(self, names: Iterable[str]) -> dict[str, Any]:
        """JSON-able counts, roles by name (another model's roles are then matched by name)."""
        names = list(names)
        return {"roles": {names[i]: [int(self.downloads[i]), int(self.new[i])] for i in np.flatnonzero(self.downloads)},
                "hosts": [[host, names[role], *counts] for (host, role), counts in sorted(self._hosts.items())]}

    def restore(self, data: Mapping[str, Any], names: Iterable[str]) -> None:
        """The counts of :meth:`to_data`; a role ``names`` does not have is another model's and is dropped."""
        index = {name: i for i, name in enumerate(names)}
        for name, (downloads, new) in data.get("roles", {}).items():
            if name in index:
                self.downloads[index[name]], self.new[index[name]] = downloads, new
        for host, name, downloads, new in data.get("hosts", []):
            if name in index:
                self._hosts[(host, index[name])] = [downloads, new]
