"""Rule T, ours and not the paper's: clusters whose pages carry almost no text of their own.

Action pages (a reply or tell-a-friend form per post, a login page behind ``?returnto=`` per
page, an invite form per contact) are as many as the pages that link them and link as those
pages do, so the paper's rules keep them: U deletes only leaves smaller than mean − 2·std of
the cluster sizes, a threshold at or below 0 on every lab site (digest §5 #17). What gives an
action page away is its content: each one shows the same template, and what differs from one
to the next is a name or a title. The sampler has downloaded them; rule T reads them.

A page's text is a sequence of blocks, one per text node (whitespace collapsed; ``script``,
``style`` and ``head`` left out), each kept as (hash, words). Within a cluster, a block that
at least half of the cluster's sampled pages show is template; a page's *own words* are the
words of its other blocks. A cluster with at least ``min_pages`` sampled pages whose text was
read, and whose median own words are below ``max_words``, is thin. A redirect has no text of
its own (its blocks are empty, not unknown), so a cluster of old-scheme aliases is thin too.

Thin clusters are deleted after rule H, unless one is the only kept way into a cluster it
links to (``pruning.delete_nodes``): a leaf of E1 always goes. On the lab sites action clusters have 0–5 own words, the
thinnest valuable cluster (a microblog's contact lists) 26, a thread page about 870.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Callable, Mapping, Sequence

import xxhash
from lxml.etree import _Element

THIN_CONTENT = "thin_content"

Blocks = tuple[tuple[int, int], ...]
"""A page's text blocks in document order: (xxh3-64 of the collapsed text, its word count)."""

_SKIPPED = frozenset({"script", "style", "head", "noscript", "template"})


def text_blocks(root: _Element) -> Blocks:
    """The visible text of a parsed page as blocks (see the module docstring)."""
    blocks: list[tuple[int, int]] = []

    def add(text: str | None) -> None:
        if text and (words := text.split()):
            blocks.append((xxhash.xxh3_64_intdigest(" ".join(words).encode()), len(words)))

    def walk(element: _Element) -> None:
        tag = element.tag
        if isinstance(tag, str) and tag.lower() in _SKIPPED:
            return
        if isinstance(tag, str):  # comments and processing instructions have no text to show
            add(element.text)
            for child in element:
                walk(child)
                add(child.tail)
        else:
            for child in element:
                walk(child)

    walk(root)
    return tuple(blocks)


def own_words(pages: Sequence[Blocks]) -> list[int]:
    """Each page's words outside the blocks that at least half of ``pages`` show."""
    shown = Counter(h for blocks in pages for h in {h for h, _ in blocks})
    template = {h for h, count in shown.items() if 2 * count >= len(pages)}
    return [sum(words for h, words in blocks if h not in template) for blocks in pages]


def thin_clusters(
    texts: Mapping[str, Blocks],
    cluster_of: Callable[[str], str | None],
    min_pages: int = 4,
    max_words: float = 10.0,
) -> dict[str, str]:
    """The thin clusters among the pages of ``texts`` (normalised page URL → its blocks), each with a note."""
    members: dict[str, list[Blocks]] = {}
    for page, blocks in texts.items():
        if (cluster := cluster_of(page)) is not None:
            members.setdefault(cluster, []).append(blocks)
    found: dict[str, str] = {}
    for cluster, pages in sorted(members.items()):
        if len(pages) < min_pages:
            continue
        median = statistics.median(own_words(pages))
        if median < max_words:
            found[cluster] = f"median {median:g} words of their own over {len(pages)} sampled pages (< {max_words:g})"
    return found
