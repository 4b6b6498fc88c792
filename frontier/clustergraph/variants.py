"""Rule V, ours and not the paper's: clusters that are parameter views of another cluster's pages.

Social sites serve one page under many URLs that differ only in words in the query: a sort
order (``?sort=stars``), a view (``?format=light``, ``?tab=quotes``), tracking and session
tags (``?ref=home&utm_source=x``, ``?sid=…``), an action on the page (``?mode=reply``). The
paper's rules see such a cluster only through its links, and often keep it (digest §5 #17:
nothing removes a large action or view cluster that links like its base). Rule V reads the
URLs themselves: strip from each of a cluster's URLs the query parameters whose value is not a
number (a number selects other content: ``?page=2``, ``?skip=20``, ``?t=123``); if that
changes at least ``min_share`` of them, what is left maps, for at least ``min_share`` of them,
to one other cluster, and the distinct stripped URLs are at least ``min_spread`` times as many
as the changed ones (each view names its own page, as
an alias does; a login form whose ``?returnto=`` names every page strips to one URL and is a
selector, not a view), the cluster is a view of that base and is deleted.

It runs on E0 before edge deletion (``pruning.prune``), so that no target counts on a view for
its coverage. Literal mode turns it off. Input: each cluster's members (the sampled and
discovered URLs mapped to it) and the mapping; output: the deleted clusters with a note.

Its counterpart for numbers, :func:`paginations` (ours too), strips the number parameters
instead: a cluster that is another's URLs with a number added holds that cluster's further
pages, which pruning lets lead where the first pages' kept edges lead.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping

PARAMETER_VARIANT = "parameter_variant"


def _keeping(normalised: str, numbers: bool) -> str:
    """``normalised`` with only the query parameters whose value is all digits (``numbers``) or is not (the
    query dropped if none is left)."""
    path, mark, query = normalised.partition("?")
    if not mark:
        return normalised
    kept = [pair for pair in query.split("&")
            if ((value := pair.partition("=")[2]).isdigit() and value.isascii()) == numbers]
    return f"{path}?{'&'.join(kept)}" if kept else path


def without_word_parameters(normalised: str) -> str:
    """``normalised`` without the query parameters whose value is not all digits (the query dropped if none is left)."""
    return _keeping(normalised, numbers=True)


def without_number_parameters(normalised: str) -> str:
    """``normalised`` without the query parameters whose value is all digits (the query dropped if none is left)."""
    return _keeping(normalised, numbers=False)


def _base(cluster: str, urls: set[str], strip: Callable[[str], str], cluster_of: Callable[[str], str | None],
          min_share: float) -> tuple[str, int, set[str]] | None:
    """The one other cluster that nearly all of ``urls`` map to once ``strip`` changed them: (base, count, stripped)."""
    changed = [plain for url in urls if (plain := strip(url)) != url]
    stripped = set(changed)
    if not urls or not stripped or len(changed) < min_share * len(urls):
        return None
    bases = Counter(cluster_of(url) for url in stripped)
    base, count = min(bases.items(), key=lambda item: (-item[1], item[0] or ""))
    if base is None or base == cluster or count < min_share * len(stripped):
        return None
    return base, count, stripped


def paginations(
    members: Mapping[str, Iterable[str]], cluster_of: Callable[[str], str | None], min_share: float = 0.9,
) -> dict[str, str]:
    """The clusters of ``members`` that are further pages of another cluster's pages: cluster → that base.

    Rule V's counterpart for numbers: strip from each URL the query parameters whose value is a
    number (``?skip=20``, ``?page=2``, ``?before=1234``); if that changes nearly all of them and
    nearly all of what is left maps to one other cluster, the cluster holds that cluster's later
    pages (a journal's older entries, a post's further comments), which list what the first
    page lists. Pruning lets them lead where their base's kept edges lead (``pruning.prune``).
    """
    found: dict[str, str] = {}
    for cluster in sorted(members):
        if "?" in cluster and (based := _base(cluster, set(members[cluster]), without_number_parameters,
                                              cluster_of, min_share)):
            found[cluster] = based[0]
    return found


def parameter_variants(
    members: Mapping[str, Iterable[str]],
    cluster_of: Callable[[str], str | None],
    min_share: float = 0.9,
    min_spread: float = 0.5,
) -> dict[str, str]:
    """The clusters of ``members`` that are parameter views of another cluster, each with a note."""
    found: dict[str, str] = {}
    for cluster in sorted(members):
        if "?" not in cluster:
            continue
        urls = set(members[cluster])
        changed = sum(1 for url in urls if without_word_parameters(url) != url)
        # nearly every URL must be a view: ``*.blog.test/?*=*`` mixes ``?ref=friends`` with ``?skip=20``
        based = _base(cluster, urls, without_word_parameters, cluster_of, min_share)
        if based is None or len(based[2]) < min_spread * changed:
            continue
        base, count, stripped = based
        found[cluster] = (f"a view of {base}: {count} of {len(stripped)} URLs without their word parameters "
                          f"map there ({len(urls)} URLs)")
    return found
