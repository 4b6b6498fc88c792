"""Micro-benchmark of the filter language (``frontier/filters/``): ns per URL on the hot path.

The schedule and follow filters run on every discovered link (about 50 a page, 1000 pages/s
per core), so a filter's cost is paid ~10^5 times a second. URLs are the links of realistic
pages (``bench.parse_bench.make_page``: navigation, relative and external links, queries),
resolved and canonical as the frontier sees them. For each expression: the median over
``--repeat`` passes of the CPU time per URL, through ``f(url)`` and through the bare
``f.accepts(url)``, and for scale an empty Python call. Then the trap test
(``duplicate_segments``) against BUbiNG's regex oracle, on the same URLs and on adversarial
paths (Thue–Morse words: cube-free, full of squares, the worst case for both).

    python -m bench.filters_bench [--pages 200] [--repeat 9]
"""

from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from bench.parse_bench import make_page
from engine.parse import extract_links
from frontier.filters import compile_filter
from frontier.filters.segments import repeats

EXPRESSIONS = [
    "(host_ends_with(example.com) and not host_in(blocked.txt)) or max_depth(10)",
    "not duplicate_segments(3) and max_url_length(1024) and not path_ends_with(.jpg, .png, .gif, .pdf, .zip)",
    "host_ends_with(example.com)",
    "host_in(blocked.txt)",
    "max_depth(10)",
    "duplicate_segments(3)",
    r'url_matches("\.(jpg|png|gif|pdf|zip)$")',
]


def links(pages: int) -> list[str]:
    urls: list[str] = []
    for seed in range(pages):
        base = f"http://www{seed % 7}.example.com/section{seed % 5}/page-{seed}.html"
        urls.extend(extract_links(make_page(seed), base, content_type="text/html").links)
    return urls


def per_item_ns(calls: dict[str, Callable[[str], object]], items: list[str], repeat: int) -> dict[str, float]:
    """Median over ``repeat`` passes of the CPU nanoseconds per item, for each call.

    The calls take turns within each pass, so a burst of load on the shared machine hits
    them alike and their ratios hold better than their absolute figures.
    """
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(repeat):
        for name, call in calls.items():
            start = time.process_time_ns()
            for item in items:
                call(item)
            times[name].append((time.process_time_ns() - start) / len(items))
    return {name: statistics.median(values) for name, values in times.items()}


def thue_morse_path(n: int) -> str:
    return "/" + "/".join("ab"[bin(i).count("1") % 2] for i in range(n))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pages", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=9)
    args = parser.parse_args()
    urls = links(args.pages)
    with tempfile.TemporaryDirectory() as folder:
        blocked = Path(folder) / "blocked.txt"
        blocked.write_text("".join(f"blocked{i}.example.com\nspam{i}.test\n" for i in range(500)))
        filters = [compile_filter(text, kind="url", base_dir=Path(folder)) for text in EXPRESSIONS]
    calls: dict[str, Callable[[str], object]] = {"empty": lambda u: True}
    for text, f in zip(EXPRESSIONS, filters):
        calls[text] = f.accepts
        calls["f(url): " + text] = f
    ns = per_item_ns(calls, urls, args.repeat)
    print(f"{len(urls):,} URLs from {args.pages} pages; median of {args.repeat} passes, CPU ns per URL")
    print(f"  {'empty call (lambda u: True)':<100} {ns['empty']:7.0f}")
    for text, f in zip(EXPRESSIONS, filters):
        accepted = sum(map(f, urls)) / len(urls)
        print(f"  {text:<100} {ns[text]:7.0f}  (through f(url): {ns['f(url): ' + text]:.0f}; true for {accepted:.0%})")

    oracle = re.compile(r".*(/.*)\1{2,}(/.*)?").fullmatch
    paths = [u[u.find("/", 8) :].partition("?")[0] for u in urls]
    ns = per_item_ns({"ours": lambda p: repeats(p, 3), "regex": oracle}, paths, args.repeat)
    print(f"\nduplicate segments (T=3) on these paths: ours {ns['ours']:.0f} ns, regex oracle {ns['regex']:.0f} ns "
          f"({ns['regex'] / ns['ours']:.1f}x)")
    print("adversarial paths (Thue-Morse, n segments), CPU µs per path:")
    for n in (20, 50, 100, 200, 400, 1000):
        path = [thue_morse_path(n)]
        contenders: dict[str, Callable[[str], object]] = {"ours": lambda p: repeats(p, 3)}
        if n <= 400:  # beyond, the regex takes seconds
            contenders["regex"] = oracle
        ns = per_item_ns(contenders, path, max(3, args.repeat // 3))
        print(f"  n={n:5}: ours {ns['ours'] / 1000:9.0f}   regex oracle {ns.get('regex', float('nan')) / 1000:9.0f}")

if __name__ == "__main__":
    main()
