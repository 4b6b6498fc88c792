"""Frequent itemsets by FP-growth (Han et al. 2004), mined per bin of the sample (digest §2.4).

Reads transactions (item sets) and returns itemsets with their supports; pure computation,
no file, clock or network. :func:`frequent_itemsets` gives *every* frequent itemset, not
only the closed or maximal ones, up to an optional length cap; :func:`stable_itemsets` keeps
those frequent in each of M contiguous bins of the sampling order (the paper's
I = F(b_1) ∩ … ∩ F(b_M)), so items that occur in one burst, such as one user's pages sampled
together, do not become literals of a pattern.

The outputs are ordered deterministically (by length, then by the sorted items), so a model
built from them serialises to the same bytes every time.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence

Weighted = list[tuple[tuple[str, ...], int]]


class _Node:
    """One FP-tree node: ``count`` transactions share the path from the root to here."""

    __slots__ = ("children", "count", "item", "parent")

    def __init__(self, item: str, parent: _Node | None) -> None:
        self.item = item
        self.count = 0
        self.parent = parent
        self.children: dict[str, _Node] = {}


def _tree(weighted: Weighted, min_support: int) -> tuple[list[str], dict[str, list[_Node]], dict[str, int]]:
    """The FP-tree of ``weighted``: its frequent items (most frequent first; ties by item), node lists, supports."""
    support: Counter[str] = Counter()
    for items, count in weighted:
        for item in items:
            support[item] += count
    order = sorted((item for item, n in support.items() if n >= min_support), key=lambda item: (-support[item], item))
    rank = {item: index for index, item in enumerate(order)}
    header: dict[str, list[_Node]] = {item: [] for item in order}
    root = _Node("", None)
    for items, count in weighted:
        node = root
        for item in sorted((item for item in items if item in rank), key=rank.__getitem__):
            child = node.children.get(item)
            if child is None:
                child = node.children[item] = _Node(item, node)
                header[item].append(child)
            child.count += count
            node = child
    return order, header, {item: support[item] for item in order}


def _prefix(node: _Node) -> tuple[str, ...]:
    """The items on the path from ``node``'s parent up to (not including) the root, root side first."""
    path: list[str] = []
    parent = node.parent
    while parent is not None and parent.parent is not None:
        path.append(parent.item)
        parent = parent.parent
    path.reverse()
    return tuple(path)


def _mine(
    weighted: Weighted, suffix: tuple[str, ...], min_support: int, max_length: int, out: dict[frozenset[str], int]
) -> None:
    """Add to ``out`` every frequent itemset that extends ``suffix`` with items of ``weighted``."""
    order, header, support = _tree(weighted, min_support)
    for item in reversed(order):  # least frequent first: its conditional base is the smallest
        itemset = (*suffix, item)
        out[frozenset(itemset)] = support[item]
        if len(itemset) < max_length:
            base = [(_prefix(node), node.count) for node in header[item]]
            _mine([(path, count) for path, count in base if path], itemset, min_support, max_length, out)


def _ordered(found: dict[frozenset[str], int]) -> dict[frozenset[str], int]:
    return {itemset: found[itemset] for itemset in sorted(found, key=lambda s: (len(s), sorted(s)))}


def frequent_itemsets(
    transactions: Sequence[frozenset[str]], min_support: int, max_length: int = 12
) -> dict[frozenset[str], int]:
    """Every non-empty itemset of at most ``max_length`` items in ≥ ``min_support`` transactions, with its support."""
    if min_support < 1:
        raise ValueError(f"min_support must be at least 1, not {min_support}")
    found: dict[frozenset[str], int] = {}
    if max_length > 0:
        _mine([(tuple(items), 1) for items in transactions if items], (), min_support, max_length, found)
    return _ordered(found)


def contiguous_bins(n: int, m: int) -> list[range]:
    """``m`` contiguous chunks of ``range(n)`` whose sizes differ by at most one (the larger ones first)."""
    if m < 1:
        raise ValueError(f"the number of bins must be at least 1, not {m}")
    size, extra = divmod(n, m)
    bins, start = [], 0
    for index in range(m):
        stop = start + size + (index < extra)
        bins.append(range(start, stop))
        start = stop
    return bins


def _everywhere(transactions: Sequence[frozenset[str]], bins: Iterable[range], min_support: int) -> frozenset[str]:
    """The items frequent in every bin: the only items a stable itemset can hold."""
    kept: set[str] | None = None
    for chunk in bins:
        counts = Counter(item for index in chunk for item in transactions[index])
        frequent = {item for item, n in counts.items() if n >= min_support}
        kept = frequent if kept is None else kept & frequent
    return frozenset(kept or ())


def stable_itemsets(
    transactions: Sequence[frozenset[str]], bins: int = 6, min_support: int = 5, max_length: int = 12
) -> dict[frozenset[str], tuple[int, ...]]:
    """The itemsets frequent in every contiguous bin, each with its per-bin supports (§2.4)."""
    chunks = contiguous_bins(len(transactions), bins)
    allowed = _everywhere(transactions, chunks, min_support)
    stable: dict[frozenset[str], tuple[int, ...]] | None = None
    for chunk in chunks:
        # Items not frequent in every bin cannot be in a stable itemset; dropping them first
        # leaves every other support unchanged and keeps the trees small.
        found = frequent_itemsets([transactions[i] & allowed for i in chunk], min_support, max_length)
        if stable is None:
            stable = {itemset: (support,) for itemset, support in found.items()}
        else:
            stable = {itemset: (*supports, found[itemset]) for itemset, supports in stable.items() if itemset in found}
    return stable or {}
