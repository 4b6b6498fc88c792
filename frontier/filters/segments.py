"""The crawler-trap test: does a run of path segments repeat itself, ``/a/b/a/b/a/b/``?

BUbiNG's ``DuplicateSegmentsLessThan`` (bubing-nadine.md §2.4, "Filters"): a path is a trap
when some non-empty sequence of consecutive segments occurs ``times`` or more times in a
row. The oracle is the regular expression ``.*(/.*)\\1{times-1,}(/.*)?`` over the path; the
tests check the two agree.

Cost. Regular expressions backtrack (cubic on adversarial paths). Here the segments become
small integers and the question becomes "does this sequence contain a ``times``-th power
``u^times``?", answered in two stages:

1. A path whose segments are all distinct (nearly every real URL) has no repetition at
   all: one ``split`` and one ``set``, both in C, and done.
2. Otherwise Main and Lorentz's divide and conquer: a power lies in the left half, in the
   right half, or crosses the middle; the crossing ones, for every period at once, come
   out of two Z-arrays (longest common extensions forward and backward), linear in the
   length of the piece. Each level of the recursion is linear, so the worst case is
   O(n log n) for n segments, a log factor above the paper's suffix-tree walk simulated on
   a suffix array, with far less code. Pieces whose segments are all distinct are skipped
   at once, so the work concentrates on the repeated part. bench/RESULTS.md has the cost
   on adversarial paths, against the regex.
"""

from __future__ import annotations

__all__ = ["repeats"]


def repeats(path: str, times: int) -> bool:
    """True if some run of consecutive segments of ``path`` occurs ``times`` (≥ 2) times in a row.

    ``path`` starts with ``/`` and holds no query; its segments are the pieces between
    slashes, empty ones included (``//`` is an empty segment, as in the regex oracle).
    """
    if path.count("/") < times:  # fewer segments than copies needed
        return False
    segments = path.split("/")
    del segments[0]  # the empty string before the leading slash
    if len(set(segments)) == len(segments):
        return False
    ids: dict[str, int] = {}
    return _has_power([ids.setdefault(s, len(ids)) for s in segments], times)


def _has_power(s: list[int], times: int) -> bool:
    """Does ``s`` contain ``u * times`` for some non-empty ``u``? (Main–Lorentz.)"""
    n = len(s)
    if n < times or len(set(s)) == n:
        return False
    middle = n // 2
    left, right = s[:middle], s[middle:]
    return _has_power(left, times) or _has_power(right, times) or _crosses(left, right, times)


def _crosses(left: list[int], right: list[int], times: int) -> bool:
    """Is there a power ``u * times`` in ``left + right`` that overlaps both halves?

    A repetition of period p and length ≥ 2p that straddles the middle m contains the
    pair of positions (m-p, m) or the pair (m, m+p). For a pair (i, i+p), the maximal
    stretch of period p around it is B + p + F long, where F is how far s[i:] and
    s[i+p:] agree forward and B how far s[:i] and s[:i+p] agree backward; it holds a
    ``times``-th power iff B + F ≥ (times-1)·p.
    """
    a, b = len(left), len(right)
    whole = left + right
    backward = left[::-1]
    # forward[j] = common prefix of right and whole[j-(b+1):], for j past the separator
    forward = _z(right + [-1] + whole)
    # behind[j] = common prefix of reversed(left) and reversed(whole)[j-(a+1):]
    behind = _z(backward + [-1] + whole[::-1])
    need = times - 1
    for p in range(1, (a + b) // times + 1):
        if p <= a:  # the pair (m-p, m): F from `forward`, B from the Z-array of reversed(left)
            f = forward[b + 1 + a - p]
            back = behind[p] if p < a else 0
            if back + f >= need * p:
                return True
        if p < b:  # the pair (m, m+p): F from the Z-array of right, B from reversed(whole)
            f = forward[p]
            back = behind[a + 1 + b - p]
            if back + f >= need * p:
                return True
    return False


def _z(s: list[int]) -> list[int]:
    """The Z-array: z[i] = length of the longest common prefix of s and s[i:] (z[0] = 0)."""
    n = len(s)
    z = [0] * n
    lo = hi = 0
    for i in range(1, n):
        k = min(hi - i, z[i - lo]) if i < hi else 0
        while i + k < n and s[k] == s[i + k]:
            k += 1
        z[i] = k
        if i + k > hi:
            lo, hi = i, i + k
    return z
