"""SOUrCe's crawl metrics (digest §4.4): AT-17 against every row of Tables 3–4 as the digest transcribes them (§4.5).

Each table row gives, per method, the ratio (VR or HR), the recall and the printed F. Our F
of the printed ratio and recall must be within ±0.001 of the printed F. One entry misses by
a hair (Douban Review, TPM: 0.18099 against 0.182), because its inputs are printed to three
places; it is checked against the F reachable from inputs within half a unit of their last
place instead. The "Average" rows average each column, so their F is the mean of our
per-site F.
"""

from __future__ import annotations

import statistics

import pytest

from bench.source_metrics import (
    f_measure,
    harvest_rate,
    recall,
    valid_ratio,
)

Entry = tuple[str, float, float, float]  # (method, ratio, recall, printed F)

TABLE3 = {  # crawling-for-UCC, B = 5,000: VR, Recall, F per method
    "ASP": [("SOUrCe", 0.9988, 0.3187, 0.4833), ("iRobot", 0.7419, 0.0466, 0.0876), ("BFS", 0.8566, 0.2733, 0.4144)],
    "YouTube": [("SOUrCe", 0.9992, 0.2503, 0.4003), ("iRobot", 0.9977, 0.0218, 0.0427),
                ("BFS", 0.997, 0.2497, 0.3994)],
    "Douban": [("SOUrCe", 0.9996, 0.2907, 0.4504), ("iRobot", 0.8994, 0.0437, 0.0833),
               ("BFS", 0.6064, 0.1764, 0.2732)],
    "Hupu": [("SOUrCe", 0.9978, 0.2501, 0.400), ("iRobot", 1.000, 0.0864, 0.1590), ("BFS", 0.9924, 0.2488, 0.3978)],
    "Rott": [("SOUrCe", 0.9998, 0.2527, 0.4035), ("iRobot", 0.9796, 0.0367, 0.07029),
             ("BFS", 0.982, 0.2482, 0.3963)],
    "Stack": [("SOUrCe", 0.9984, 0.2978, 0.4588), ("iRobot", 0.9979, 0.0277, 0.054), ("BFS", 0.8328, 0.2484, 0.3827)],
}
TABLE3_AVERAGE = [("SOUrCe", 0.9989, 0.2767, 0.4327), ("iRobot", 0.9361, 0.0438, 0.0828),
                  ("BFS", 0.8779, 0.2408, 0.3773)]

TABLE4 = {  # crawling-for-target, B = #(all target): HR, Recall, F per method
    "ASP Detail": [("SOUrCe", 0.804, 0.804, 0.804), ("TPM", 0.689, 0.077, 0.138), ("BFS", 0.416, 0.416, 0.416)],
    "ASP Profile": [("SOUrCe", 0.846, 0.846, 0.846), ("TPM", 0.802, 0.090, 0.162), ("BFS", 0.265, 0.265, 0.265)],
    "YouTube Detail": [("SOUrCe", 0.952, 0.952, 0.952), ("TPM", 0.994, 0.752, 0.856),
                       ("BFS", 0.723, 0.723, 0.723)],
    "YouTube Profile": [("SOUrCe", 0.881, 0.881, 0.881), ("TPM", 1.000, 0.368, 0.538),
                        ("BFS", 0.265, 0.265, 0.265)],
    "Douban Review": [("SOUrCe", 0.772, 0.772, 0.772), ("TPM", 0.870, 0.101, 0.182), ("BFS", 0.096, 0.097, 0.097)],
    "Douban Movie": [("SOUrCe", 0.780, 0.780, 0.780), ("TPM", 1.000, 0.536, 0.698), ("BFS", 0.279, 0.279, 0.279)],
    "Hupu Detail": [("SOUrCe", 0.971, 0.971, 0.971), ("TPM", 0.995, 0.136, 0.239), ("BFS", 0.816, 0.816, 0.816)],
    "Hupu Profile": [("SOUrCe", 0.854, 0.854, 0.854), ("TPM", 0.150, 0.150, 0.150), ("BFS", 0.146, 0.146, 0.146)],
    "Rott Detail": [("SOUrCe", 0.645, 0.645, 0.645), ("TPM", 0.937, 0.103, 0.186), ("BFS", 0.134, 0.134, 0.134)],
    "Rott Profile": [("SOUrCe", 0.816, 0.816, 0.816), ("TPM", 0.975, 0.425, 0.592), ("BFS", 0.534, 0.534, 0.534)],
    "Stack Detail": [("SOUrCe", 0.897, 0.897, 0.897), ("TPM", 0.997, 0.418, 0.589), ("BFS", 0.393, 0.393, 0.393)],
    "Stack Profile": [("SOUrCe", 0.642, 0.642, 0.642), ("TPM", 0.521, 0.114, 0.187), ("BFS", 0.196, 0.196, 0.196)],
}
TABLE4_AVERAGE = [("SOUrCe", 0.822, 0.822, 0.822), ("TPM", 0.828, 0.273, 0.376), ("BFS", 0.355, 0.355, 0.355)]

ROUNDED_INPUTS = {("Douban Review", "TPM"): 3}  # within rounding of its inputs (printed to 3 places), not ±0.001


def entries(table: dict[str, list[Entry]]) -> list[tuple[str, Entry]]:
    return [(row, entry) for row, methods in table.items() for entry in methods]


@pytest.mark.parametrize(("row", "entry"), entries(TABLE3) + entries(TABLE4))
def test_at17_f_of_the_printed_ratio_and_recall_is_the_printed_f(row: str, entry: Entry) -> None:
    method, ratio, found, printed = entry
    if (row, method) not in ROUNDED_INPUTS:
        assert f_measure(ratio, found) == pytest.approx(printed, abs=0.001)
        return
    half_unit = 10.0 ** -ROUNDED_INPUTS[(row, method)] / 2
    assert f_measure(ratio, found) != pytest.approx(printed, abs=0.001)
    low = f_measure(ratio - half_unit, found - half_unit)  # F grows with both of its inputs
    high = f_measure(ratio + half_unit, found + half_unit)
    assert low - half_unit <= printed <= high + half_unit


@pytest.mark.parametrize(("table", "average"), [(TABLE3, TABLE3_AVERAGE), (TABLE4, TABLE4_AVERAGE)])
def test_at17_average_rows_average_each_column_f_included(table: dict[str, list[Entry]],
                                                          average: list[Entry]) -> None:
    for column, (method, ratio, found, printed) in enumerate(average):
        rows = [methods[column] for methods in table.values()]
        assert all(entry[0] == method for entry in rows)
        assert statistics.mean(entry[1] for entry in rows) == pytest.approx(ratio, abs=0.001)
        assert statistics.mean(entry[2] for entry in rows) == pytest.approx(found, abs=0.001)
        assert statistics.mean(f_measure(entry[1], entry[2]) for entry in rows) == pytest.approx(printed, abs=0.001)


def test_at17_the_digests_example() -> None:
    assert round(f_measure(0.9988, 0.3187), 4) == 0.4832


def test_ratios_and_recall_from_counts() -> None:
    assert valid_ratio(4994, 5000) == pytest.approx(0.9988)
    assert harvest_rate(3, 4) == 0.75
    assert recall(5, 20) == 0.25


def test_empty_denominators_and_a_zero_f_give_zero() -> None:
    assert valid_ratio(0, 0) == harvest_rate(0, 0) == recall(0, 0) == 0.0
    assert f_measure(0.0, 0.0) == 0.0


@pytest.mark.parametrize(("part", "whole"), [(5, 4), (-1, 4)])
def test_impossible_counts_are_refused(part: int, whole: int) -> None:
    with pytest.raises(ValueError, match="share"):
        valid_ratio(part, whole)
    with pytest.raises(ValueError, match="negative"):
        f_measure(-0.1, 0.5)


def test_clustering_quality_on_a_small_example() -> None:
    from bench.source_metrics import clustering_quality

    # cluster 0: 4 threads + 1 profile; cluster 1: 4 profiles; one thread an outlier; 2 help pages (too few: left out)
    clusters = [0, 0, 0, 0, 0, 1, 1, 1, 1, -1, 2, 2]
    types = ["thread"] * 4 + ["profile"] * 5 + ["thread"] + ["help"] * 2
    quality = clustering_quality(clusters, types)
    assert quality["purity"] == pytest.approx((4 + 4 + 1) / 10)
    # thread: best F is cluster 0, P 4/5, R 4/5; profile: cluster 1, P 1, R 4/5
    assert quality["micro_f"] == pytest.approx(0.5 * 0.8 + 0.5 * (2 * 0.8 / 1.8))
