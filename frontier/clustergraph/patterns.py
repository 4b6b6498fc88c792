"""URL clusters: the pattern tree, pattern strings, δ removal and the runtime mapping (digest §2.5–2.8).

Reads normalised URL keys (:func:`frontier.clustergraph.urls.normalise`) and the final
itemsets; returns pattern strings and cluster verdicts. Pure computation: no file, clock or
network (the model files are cg-2's ``model.py``).

* :class:`Itemsets` holds, per part, the itemsets frequent in every bin with their per-bin
  supports, and picks the *largest matched* itemset of a URL part (§2.5 tie-breaks).
* :func:`node_of` places a URL in the three-level tree; :func:`pattern_of` names its cluster:
  tokens of the matched itemsets stay literal, other tokens become ``$`` (all ASCII digits)
  or ``*``, separators are kept verbatim (§2.6). A cluster *is* one pattern string.
* :func:`remove_small` drops the smallest patterns while 1 − δ of the sample stays covered (§2.7).
* :func:`names_apart` (ours) names the query parameters whose wildcarded name hides two kinds of
  number: an identifier and a position (``?before=104622`` and ``?offset=10``).
* :class:`Mapper` maps a URL at crawl time: derived pattern, else rejection when node pruning
  deleted that pattern, else the most specific retained pattern of the same skeleton (§2.8).

A pattern string cannot tell a literal token ``*`` or ``$`` from a wildcard (the paper's
pattern language has no escape); the mapper reads them as wildcards.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence, Set
from functools import lru_cache
from typing import Any, TypedDict

from frontier.clustergraph.fpgrowth import stable_itemsets
from frontier.clustergraph.urls import PARTS, Part, Tokens, itemise, tokens

PartSupports = Mapping[frozenset[str], tuple[int, ...]]
Node = tuple[frozenset[str] | None, frozenset[str] | None, frozenset[str] | None]
_Choose = Callable[[frozenset[str]], frozenset[str] | None]


class ItemsetRecord(TypedDict):
    """One itemset as plain JSON-able data: its sorted items and its support in each bin."""

    items: list[str]
    supports: list[int]


def _chooser(supports: PartSupports, cache_size: int) -> _Choose:
    """The cached largest-match choice of one part, keyed by the URL's items that occur in some itemset."""
    ranked = sorted(supports, key=lambda s: (-len(s), -sum(supports[s]), sorted(s)))

    def choose(key: frozenset[str]) -> frozenset[str] | None:
        if key in supports:  # the whole key is an itemset: no other subset is as large
            return key
        return next((itemset for itemset in ranked if itemset <= key), None)

    return lru_cache(maxsize=cache_size)(choose)


class Itemsets:
    """The final itemsets of the three parts (§2.4), read-only once built.

    ``largest`` costs one set intersection and one cache lookup: the key is the URL part's
    items that belong to some itemset, so unseen ids and names do not fill the cache.
    """

    __slots__ = ("_choose", "_supports", "_vocabulary")

    def __init__(
        self, authority: PartSupports, path: PartSupports, query: PartSupports, *, cache_size: int = 4096
    ) -> None:
        self._supports = tuple(dict(part) for part in (authority, path, query))
        self._vocabulary = tuple(frozenset().union(*part) for part in self._supports)
        self._choose = tuple(_chooser(part, cache_size) for part in self._supports)

    @classmethod
    def mine(cls, normalised: Sequence[str], bins: int = 6, min_support: int = 5, max_length: int = 12,
             numbers: bool = True) -> Itemsets:
        """The stable itemsets of a sample of normalised URLs, in sampling order (§2.3–2.4).

        ``numbers=False`` leaves all-digit tokens out of every itemset, so a number is always
        ``$`` in a pattern, never a literal (``?page=2`` and ``?page=3`` are one cluster)."""
        rows = [itemise(url) for url in normalised]
        if not numbers:
            rows = [(_words(a), _words(p), _words(q)) for a, p, q in rows]
        authority, path, query = (
            stable_itemsets([row[index] for row in rows], bins, min_support, max_length) for index in range(len(PARTS))
        )
        return cls(authority, path, query)

    def adding(self, part: Part, extra: PartSupports) -> Itemsets:
        """These itemsets with ``extra`` ones in ``part`` (an existing itemset keeps its supports)."""
        parts = [dict(supports) for supports in self._supports]
        parts[PARTS.index(part)] = {**extra, **parts[PARTS.index(part)]}
        return Itemsets(*parts)

    def supports(self, part: Part) -> dict[frozenset[str], tuple[int, ...]]:
        """The itemsets of ``part`` with their per-bin supports."""
        return dict(self._supports[PARTS.index(part)])

    def largest(self, part: Part, items: Iterable[str]) -> frozenset[str] | None:
        """The largest itemset of ``part`` inside ``items``; ties: larger total support, then smaller sorted tuple."""
        return self.match(PARTS.index(part), items)

    def match(self, index: int, items: Iterable[str]) -> frozenset[str] | None:
        """:meth:`largest` by part index. ``items`` may be a :class:`Tokens` part: no token equals a separator run."""
        return self._choose[index](self._vocabulary[index].intersection(items))

    def to_data(self) -> dict[str, list[ItemsetRecord]]:
        """Plain data for a JSON model: per part, the itemsets ordered by length, then by their sorted items."""
        return {
            name: [
                ItemsetRecord(items=sorted(itemset), supports=list(part[itemset]))
                for itemset in sorted(part, key=lambda s: (len(s), sorted(s)))
            ]
            for name, part in zip(PARTS, self._supports, strict=True)
        }

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Itemsets:
        """The inverse of :meth:`to_data`."""
        authority, path, query = (
            {
                frozenset(str(i) for i in record["items"]): tuple(int(n) for n in record["supports"])
                for record in data[name]
            }
            for name in PARTS
        )
        return cls(authority, path, query)

    def __repr__(self) -> str:
        counts = ", ".join(f"{name}={len(part)}" for name, part in zip(PARTS, self._supports, strict=True))
        return f"<Itemsets {counts}>"


def _words(items: frozenset[str]) -> frozenset[str]:
    """``items`` without its all-digit tokens."""
    return frozenset(t for t in items if not (t.isdigit() and t.isascii()))


def _node(parts: Tokens, itemsets: Itemsets, strict_nesting: bool) -> Node:
    """The tree node of a URL: (A, P, Q), None where a level is not matched or not looked up (§2.5)."""
    authority = itemsets.match(0, parts.authority)
    if authority is None:
        return None, None, None
    path = itemsets.match(1, parts.path)
    # The [R] empty-path node: a frequent query under an infrequent path still forms a Q node.
    if path is None and strict_nesting:
        return authority, None, None
    return authority, path, itemsets.match(2, parts.query)


def _wildcarded(part: tuple[str, ...], literal: frozenset[str] | None) -> str:
    """One part of a pattern: separators and matched tokens verbatim, ``$`` for digits, ``*`` otherwise."""
    keep = literal or frozenset()
    pieces = list(part)
    for index in range(0, len(pieces), 2):  # the tokens; odd positions are separator runs
        piece = pieces[index]
        if piece and piece not in keep:
            pieces[index] = "$" if piece.isdigit() and piece.isascii() else "*"
    return "".join(pieces)


def _pattern(parts: Tokens, node: Node) -> str:
    key = _wildcarded(parts.authority, node[0]) + _wildcarded(parts.path, node[1])
    query = _wildcarded(parts.query, node[2])
    return f"{key}?{query}" if query else key


def node_of(normalised: str, itemsets: Itemsets, strict_nesting: bool = False) -> Node:
    """The one tree node that stores ``normalised``: the deepest matched; ``(None, None, None)`` is the root."""
    return _node(tokens(normalised), itemsets, strict_nesting)


def pattern_of(normalised: str, itemsets: Itemsets, strict_nesting: bool = False) -> str:
    """The cluster name of ``normalised`` (§2.6), e.g. ``*.blog.test/$.html?mode=reply``."""
    parts = tokens(normalised)
    return _pattern(parts, _node(parts, itemsets, strict_nesting))


def remove_small(sizes: Mapping[str, int], n: int, delta: float) -> set[str]:
    """The patterns kept by §2.7: drop the smallest (ties by pattern) while ≥ (1 − δ)·n URLs stay covered."""
    allowed = delta * n + 1e-9  # uncovered URLs allowed; the epsilon absorbs 0.03·n's rounding
    uncovered = n - sum(sizes.values())
    kept = set(sizes)
    for pattern in sorted(sizes, key=lambda p: (sizes[p], p)):
        if uncovered + sizes[pattern] > allowed:
            break
        uncovered += sizes[pattern]
        kept.discard(pattern)
    return kept


def query_keys(normalised: str) -> frozenset[str]:
    """The parameter names of a normalised key's query (``a/?skip=20&x`` → ``{skip, x}``)."""
    query = normalised.partition("?")[2]
    return frozenset(pair.partition("=")[0] for pair in query.split("&")) if query else frozenset()


def _as_url(parts: Tokens) -> Tokens:
    """A pattern's tokens as a URL of it would be: a number where the pattern says ``$``."""
    return Tokens(*(tuple("0" if piece == "$" else piece for piece in part) for part in parts))


def instance_of(special: str, general: str) -> bool:
    """Whether every URL of pattern ``special`` fits pattern ``general`` (``$.lj/$.html`` of ``*.lj/$.html``)."""
    return Mapper(Itemsets({}, {}, {}), (general,), ()).fallback(_as_url(tokens(special))) == general


def numbers_apart(removed: Iterable[str], retained: Iterable[str], members: Mapping[str, Iterable[str]]) -> set[str]:
    """The patterns δ removed that would fold into a retained one reading a number of their query as a word (ours).

    δ's removal is a merge where a retained pattern of the same skeleton fits (§2.8 step 2):
    ``bob.lj/profile`` joins ``*.lj/profile``, a page of the same kind. A query value is
    another matter when the parameter is another one: a number selects other content
    (``?skip=20``: a journal's next page; ``?page=2``: a post's next comments), a word shows the
    same page again (``?ref=friends``, ``?format=light``), which is what rule V reads. Folding
    the rare ``/?*=$`` into the common ``/?*=*`` puts a journal's older pages with its
    tracking aliases, and whatever deletes or prunes the aliases then loses the pages. Such a
    pattern is kept however small it is, if no parameter name of its ``members`` (the sampled
    URLs that derived it) is one of the other pattern's: the same parameter with a number
    for a value (a numeric user name in ``?journal=``) is the same kind of page.
    """
    mapper = Mapper(Itemsets({}, {}, {}), retained, ())
    keys = {pattern: frozenset().union(*map(query_keys, urls)) for pattern, urls in members.items()}
    found: set[str] = set()
    for pattern in removed:
        parts = tokens(pattern)
        target = mapper.fallback(_as_url(parts))
        if target is None or keys.get(pattern, frozenset()) & keys.get(target, frozenset()):
            continue
        if any(mine == "$" and theirs == "*" for mine, theirs in zip(parts.query[::2], tokens(target).query[::2],
                                                                      strict=True)):
            found.add(pattern)
    return found


def _number_parameters(normalised: str) -> list[tuple[str, str]]:
    """The (name, value) pairs of a normalised key's query whose value is all digits."""
    query = normalised.partition("?")[2]
    pairs = [pair.partition("=") for pair in query.split("&")] if query else []
    return [(name, value) for name, _, value in pairs if value.isdigit() and value.isascii()]


def names_apart(urls: Mapping[str, Iterable[str]], sampled: Set[str], min_pages: int) -> set[str]:
    """Query parameter names a pattern's ``*`` must not hide: identifiers beside positions (ours).

    A parameter name the itemsets did not keep becomes ``*`` (it was not frequent in every
    bin), so ``/?*=$`` gathers every number parameter of a path. Two kinds of number differ:
    an *identifier* names one item, so no two URLs share a value (``?before=104622``, a cursor
    at a message), while a *position* counts from the start, so many URLs share each value
    (``?offset=10``, ``?page=2`` on every host). A site that has both for one listing serves the
    same pages twice, once by each, and the two must be clusters of their own for pruning and
    labelling to tell them apart. For each pattern of ``urls`` (its distinct URLs: sampled pages
    and their links) with a wildcarded name whose value is ``$``, the names seen on at least
    ``min_pages`` pages of ``sampled`` are sorted into identifiers (every value distinct) and
    positions (at most half as many values as URLs); if both occur, all of them are returned.
    """
    found: set[str] = set()
    for pattern, members in urls.items():
        if "*=$" not in pattern.partition("?")[2].split("&"):
            continue
        values: dict[str, list[str]] = {}
        pages: dict[str, int] = {}
        for url in members:
            for name, value in _number_parameters(url):
                values.setdefault(name, []).append(value)
                pages[name] = pages.get(name, 0) + (url in sampled)
        frequent = [name for name in values if pages[name] >= min_pages]
        identifiers = {name for name in frequent if len(set(values[name])) == len(values[name])}
        positions = {name for name in frequent if 2 * len(set(values[name])) <= len(values[name])}
        if identifiers and positions:
            found |= identifiers | positions
    return found


Skeleton = tuple[tuple[bool, tuple[str, ...], bool], ...]


def _skeleton(parts: Tokens) -> Skeleton:
    """Separators and token count of each part: a URL and every pattern it may match share it."""
    return tuple((part[0] != "", part[1::2], part[-1] != "") for part in parts)


def _fill(parts: Tokens) -> tuple[str, ...]:
    """The non-empty tokens of all three parts, in order: what a pattern of the same skeleton matches."""
    return tuple(piece for part in parts for piece in part[::2] if piece)


def _fits(spec: str, token: str) -> bool:
    if spec == "*":
        return True
    if spec == "$":
        return token.isdigit() and token.isascii()
    return spec == token


class Mapper:
    """URL → surviving cluster at crawl time (§2.8), the same function training uses after δ.

    Invariant: ``retained`` and ``deleted`` are disjoint; every fallback bucket holds only
    retained patterns, most specific first (most literals, then most ``$``, then the smaller
    string), so the first that fits is the answer. A call costs a split, a few cache
    lookups, one set lookup and, only on a miss, a scan of one short bucket.
    """

    __slots__ = ("_buckets", "_deleted", "_itemsets", "_retained", "_strict")

    def __init__(
        self, itemsets: Itemsets, retained: Iterable[str], deleted: Iterable[str], strict_nesting: bool = False
    ) -> None:
        self._itemsets = itemsets
        self._retained = frozenset(retained)
        self._deleted = frozenset(deleted)
        self._strict = strict_nesting
        if both := self._retained & self._deleted:
            raise ValueError(f"patterns both retained and deleted: {sorted(both)[:5]}")
        buckets: dict[Skeleton, list[tuple[tuple[str, ...], str]]] = {}
        for pattern in self._retained:
            parts = tokens(pattern)
            buckets.setdefault(_skeleton(parts), []).append((_fill(parts), pattern))
        for bucket in buckets.values():
            bucket.sort(key=lambda entry: (-sum(s not in ("*", "$") for s in entry[0]), -entry[0].count("$"), entry[1]))
        self._buckets = buckets

    @property
    def retained(self) -> frozenset[str]:
        return self._retained

    @property
    def deleted(self) -> frozenset[str]:
        return self._deleted

    def pattern(self, normalised: str) -> str:
        """The derived pattern of ``normalised`` (step 1), whether or not it survived."""
        return pattern_of(normalised, self._itemsets, self._strict)

    def classify(self, normalised: str) -> tuple[str | None, str | None]:
        """``(cluster, None)``, ``(None, "deleted")`` (node-pruned, no fallback) or ``(None, "unmapped")``."""
        parts = tokens(normalised)
        pattern = _pattern(parts, _node(parts, self._itemsets, self._strict))
        if pattern in self._retained:
            return pattern, None
        if pattern in self._deleted:
            return None, "deleted"
        candidate = self.fallback(parts)
        return (candidate, None) if candidate is not None else (None, "unmapped")

    def fallback(self, parts: Tokens) -> str | None:
        """Step 2 alone: the most specific retained pattern of the skeleton of ``parts`` that fits it."""
        bucket = self._buckets.get(_skeleton(parts))
        if bucket:
            fill = _fill(parts)
            for specs, candidate in bucket:
                if all(map(_fits, specs, fill)):
                    return candidate
        return None

    def __repr__(self) -> str:
        return f"<Mapper retained={len(self._retained)} deleted={len(self._deleted)} skeletons={len(self._buckets)}>"
