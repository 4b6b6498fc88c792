"""frontier/clustergraph/fpgrowth.py: FP-growth against brute force, contiguous bins, stability (digest AT-04…AT-06)."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from itertools import combinations

from hypothesis import given, settings
from hypothesis import strategies as st

from frontier.clustergraph.fpgrowth import contiguous_bins, frequent_itemsets, stable_itemsets


def brute_force(transactions: Sequence[frozenset[str]], min_support: int, max_length: int) -> dict[frozenset[str], int]:
    """Every subset of every transaction counted: the oracle of AT-05."""
    counts: Counter[frozenset[str]] = Counter()
    for items in transactions:
        for length in range(1, min(len(items), max_length) + 1):
            counts.update(frozenset(subset) for subset in combinations(sorted(items), length))
    return {itemset: n for itemset, n in counts.items() if n >= min_support}


databases = st.lists(st.frozensets(st.sampled_from("abcdefgh"), max_size=6), max_size=30)


@settings(max_examples=250, deadline=None)
@given(databases, st.integers(1, 6), st.integers(1, 7))
def test_at05_fp_growth_equals_brute_force(
    transactions: list[frozenset[str]], min_support: int, max_length: int
) -> None:
    found = frequent_itemsets(transactions, min_support, max_length)
    assert found == brute_force(transactions, min_support, max_length)
    assert list(found) == sorted(found, key=lambda s: (len(s), sorted(s)))  # deterministic order


def test_fp_growth_on_a_classic_database() -> None:
    # Han et al.'s running example (min support 3).
    rows = ["facdgimp", "abcflmo", "bfhjo", "bcksp", "afcelpmn"]
    found = frequent_itemsets([frozenset(row) for row in rows], 3)
    assert found[frozenset("fcam")] == 3 and found[frozenset("f")] == 4 and found[frozenset("cp")] == 3
    assert frozenset("fb") not in found and len(found) == len(brute_force([frozenset(r) for r in rows], 3, 12))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 200), st.integers(1, 12))
def test_at06_bins_are_contiguous_and_differ_by_at_most_one(n: int, m: int) -> None:
    bins = contiguous_bins(n, m)
    assert len(bins) == m
    assert [i for chunk in bins for i in chunk] == list(range(n))
    sizes = [len(chunk) for chunk in bins]
    assert max(sizes) - min(sizes) <= 1


def sample(counts_per_bin: Sequence[int], bin_size: int = 20) -> list[frozenset[str]]:
    """Six contiguous bins of ``bin_size`` URLs; the itemset {x, y} occurs the given number of times in each."""
    rows = []
    for count in counts_per_bin:
        rows += [frozenset({"x", "y", "com"})] * count + [frozenset({"com"})] * (bin_size - count)
    return rows


def test_at04_stable_in_every_bin() -> None:
    kept = stable_itemsets(sample([5, 6, 5, 9, 5, 5]))
    assert kept[frozenset({"x", "y"})] == (5, 6, 5, 9, 5, 5)
    assert kept[frozenset({"com"})] == (20,) * 6


def test_at04_dropped_when_one_bin_has_four_even_with_100_occurrences() -> None:
    rows = sample([4, 20, 20, 20, 20, 16])
    assert sum(1 for row in rows if "x" in row) >= 100
    assert frozenset({"x"}) not in stable_itemsets(rows)


def test_at04_dropped_when_absent_from_the_sixth_bin() -> None:
    kept = stable_itemsets(sample([5, 5, 5, 5, 5, 0]))
    assert frozenset({"x", "y"}) not in kept and frozenset({"x"}) not in kept
    assert frozenset({"com"}) in kept


def test_bins_follow_sampling_order_so_a_burst_is_not_stable() -> None:
    # One user's 60 pages sampled together: frequent overall, absent from five bins.
    rows = [frozenset({"bob", "lj"})] * 60 + [frozenset({"lj"})] * 60
    assert frozenset({"bob"}) not in stable_itemsets(rows)
    assert stable_itemsets(rows) == {frozenset({"lj"}): (20,) * 6}


@settings(max_examples=100, deadline=None)
@given(databases, st.integers(1, 4), st.integers(1, 3))
def test_stable_itemsets_equal_the_intersection_of_the_bins(
    transactions: list[frozenset[str]], bins: int, min_support: int
) -> None:
    per_bin = [
        brute_force([transactions[i] for i in chunk], min_support, 12)
        for chunk in contiguous_bins(len(transactions), bins)
    ]
    expected = {s: tuple(found[s] for found in per_bin) for s in per_bin[0] if all(s in found for found in per_bin)}
    assert stable_itemsets(transactions, bins, min_support) == expected
