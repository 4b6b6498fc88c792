"""Seconds-long runs of every benchmark, so none of them rots (figures are not judged here)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import orjson
import pytest

SMOKE = {
    "sieve": ["bench.sieve_bench", "--urls", "200000", "--bucket-slots", "20000"],
    "virtualizer": ["bench.virtualizer_bench", "--items", "100000", "--hosts", "1000"],
    "warc": ["bench.warc_bench", "--pages", "100", "--runs", "1"],
    "parse": ["bench.parse_bench", "--pages", "20", "--repeat", "1"],
    "fetch": ["bench.fetch_bench", "--seconds", "1", "--rounds", "1", "--workers", "20"],
    "frontier_memory": ["bench.frontier_memory", "--urls", "60000", "--step", "20000", "--hosts", "500",
                        "--workbench-bytes", "65536", "--sieve-bytes", "65536", "--cache-bytes", "65536"],
}


@pytest.mark.parametrize("name", sorted(SMOKE))
def test_benchmark_runs(name: str) -> None:
    proc = subprocess.run([sys.executable, "-m", *SMOKE[name]], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.strip(), "a benchmark must print its figures"


def test_crawl_benchmark_reports_its_figures(tmp_path: Path) -> None:
    out = tmp_path / "crawl.json"
    proc = subprocess.run(
        [sys.executable, "-m", "bench.crawl_bench", "--seconds", "3", "--runs", "1", "--hosts", "100",
         "--json", str(out)],
        capture_output=True, text=True, timeout=300,
    )
    assert proc.returncode == 0, proc.stderr[-2000:]
    median = orjson.loads(out.read_bytes())["median"]
    assert median["pages"] > 0 and median["pages_per_cpu_second"] > 0 and 0 <= median["server_cpu_share"] < 2
