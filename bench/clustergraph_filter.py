"""The graph filter's cost per URL stays flat (digest AT-28, Fig. 4), beside the duplicate check it sits by.

Measured: wall time (``time.perf_counter`` around windows of ``--window`` calls, never one call)
of ``ClusterFilter.judge(url, source)`` (§2.12: normalise, map with the §2.8 fallback, check
the kept edge) over ``--urls`` distinct canonical URLs, and of the engine's duplicate check on
the same stream: ``UrlCache.add`` of the URL's xxh3-64 fingerprint, as ``frontier/frontier.py``
does it, in the default 64 MiB cache (524,287 fingerprints, then FIFO eviction). Every window's
figure is the median of 3 passes on fresh objects (a reloaded model, an empty cache), the
subjects alternating in each pass so that the shared machine's load hits them alike.

* **Flat in URLs**: µs per URL over [0, 10^4), [10^4, 10^5) and [10^5, 10^6), each the mean of
  its windows of 10^3 URLs (a burst of others' load then spoils a few windows of one pass, which
  the median drops), within ±20% of the first; ``spread`` (the windows' standard deviation over
  their mean) shows the machine's noise. The JSON keeps the curve of Fig. 4 per 10^4 URLs.
* **Flat in clusters**: the same stream through models with more clusters: the site's sample
  trained with ``min_support=2, delta=0`` ("fine"), the site merged with other lab sites.
* **Filter / duplicate check**: the paper has 0.01 ms vs 0.05 ms against a disk-based DRUM; ours
  is an in-memory hash set, so the filter is the slower one here (AT-32: compare counts, not times).

The model is ``--model DIR`` or trained in process on the sample ``crawl learn`` would draw
(its own loop, ``engine.learn.sample_site``, over the lab without sockets:
:mod:`bench.lab_learning`), then ``train``. The
stream: the links of the site's census pages, each with the page it was found on (its source),
then URLs made from links drawn in proportion to their in-links, with new user names, ids,
tags and slugs (every token all digits or in under ``FIXED_SHARE`` of the links, its shape
kept), so that no URL repeats, plus ``--off-pattern`` URLs of random shape; all shuffled, so
that every window has the same mix and only the count of URLs processed changes.

    python -m bench.clustergraph_filter                      # blog, 10^6 URLs
    python -m bench.clustergraph_filter --model out/model --urls 100000 --json /tmp/f.json
"""

from __future__ import annotations

import argparse
import dataclasses
import gc
import itertools
import random
import re
import statistics
import string
import time
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import xxhash
from protego import Protego

from bench.invitro.social.census import census
from bench.invitro.social.web import SocialParams, SocialWeb, split_url
from bench.lab_learning import Remembered, sample_in_process
from bench.runner import RESULTS_DIR, machine, write_result
from frontier.clustergraph.model import ClusterFilter, Model, Params
from frontier.clustergraph.train import SampleRecord, train
from frontier.clustergraph.urls import in_scope
from frontier.settings import FrontierSettings
from frontier.url_cache import UrlCache
from frontier.urls import canonicalize

REPEATS = 3
FIXED_SHARE = 0.02
"""a token in at least this share of the census URLs is a word of the site, kept by the mutations"""
FINE = Params(min_support=2, delta=0.0)
"""training parameters that keep many more clusters (every pattern, itemsets of rarer tokens)"""
_TOKENS = re.compile(r"([/.?&=]+)")
_RUNS = re.compile(r"[0-9]+|[A-Za-z]+")
CACHE_BYTES = FrontierSettings().url_cache_bytes
"""the engine's default URL cache (64 MiB: 524,287 fingerprints, then FIFO eviction)"""
_fingerprint = xxhash.xxh3_64_intdigest


class Lab:
    """One lab site as the training crawl sees it: canonical in-scope outlinks, robots.txt obeyed."""

    def __init__(self, web: SocialWeb, site: str) -> None:
        self.web, self.site = web, web.site_named(site)
        self.domain = self.site.domain
        self.seeds = [u for u in (canonicalize(s) for s in web.seeds_of(site)) if u]
        self._robots: dict[str, Protego] = {}

    def fetch(self, url: str) -> tuple[int, tuple[str, ...]] | None:
        """(status, outlinks) of ``url``; None when robots.txt disallows it."""
        host, target = split_url(url)
        if host not in self._robots:
            self._robots[host] = Protego.parse(self.site.robots(host))
        if not self._robots[host].can_fetch(url, "crawl"):
            return None
        answer = self.web.answer(host, target)
        if answer is None:
            return 0, ()
        links = (canonicalize(link) for link in answer.links)
        return answer.status, tuple(dict.fromkeys(u for u in links if u and u != url and in_scope(u, self.domain)))

    def sample(self, pages: int, pilot: int = 200, seed: int = 0) -> list[SampleRecord]:
        """The sample ``crawl learn`` would draw within ``pages`` downloads (its own loop, in process)."""
        site = Remembered(self.site)
        return sample_in_process(site, self.seeds, Params(pilot_pages=pilot, seed=seed), pages, "crawl").records

    def links(self, pages: int) -> dict[str, tuple[str | None, int]]:
        """Each distinct link of the site's census pages → (the first page it was found on, None for a seed
        or a redirect: unrestricted sources, §2.12; how many pages link to it)."""
        seeds = set(self.seeds)
        found: dict[str, tuple[str | None, int]] = {}
        for page in (canonicalize(u) for u in census(self.site, pages).urls):
            status, links = (page and self.fetch(page)) or (0, ())
            for link in links:
                source, count = found.get(link, (None if page in seeds or 300 <= status < 400 else page, 0))
                found[link] = (source, count + 1)
        return found


def _fresh(token: str, rng: random.Random) -> str:
    """A new value of the same shape: each digit run new digits, each letter run new letters."""
    return _RUNS.sub(lambda m: "".join(rng.choices(string.digits if m[0].isdigit() else string.ascii_lowercase,
                                                   k=len(m[0]))), token)


def mutate(url: str, domain: str, fixed: frozenset[str], rng: random.Random) -> str | None:
    """``url`` with new user names, ids, tags and slugs (every variable token, the domain kept), canonical."""
    def swap(token: str) -> str:
        return _fresh(token, rng) if token and (token.isdigit() or token not in fixed) else token

    scheme, _, rest = url.partition("://")
    authority, slash, target = rest.partition("/")
    host, colon, port = authority.partition(":")
    if host.endswith("." + domain):
        host = ".".join(map(swap, host[: -len(domain) - 1].split("."))) + "." + domain
    target = "".join(swap(p) if i % 2 == 0 else p for i, p in enumerate(_TOKENS.split(target)))
    return canonicalize(f"{scheme}://{host}{colon}{port}{slash}{target}")


def off_pattern(domain: str, rng: random.Random) -> str | None:
    """A URL of the site shaped like none of its links: random host label, path and query."""
    def word() -> str:
        return _fresh(rng.choice(["ab", "abc12", "abcdef", "12345", "a1b2c"]), rng)

    path = "/" + word() + "".join(rng.choice("/./") + word() for _ in range(rng.randint(0, 4)))
    query = "&".join(f"{word()}={word()}" for _ in range(rng.randint(0, 3)))
    return canonicalize(f"http://{word()}.{domain}{path}" + (f"?{query}" if query else ""))


def stream(links: dict[str, tuple[str | None, int]], domain: str, n: int, off_share: float,
           seed: int = 0) -> tuple[list[str], list[str | None]]:
    """``n`` distinct canonical URLs with their source pages (see the module docstring), shuffled.

    A fresh URL is made from a link drawn in proportion to the pages linking to it, so the
    stream's shapes come in the proportions a crawler meets them.
    """
    rng = random.Random(seed)
    base = list(links)
    counts = Counter(t for url in base for t in set(_TOKENS.split(url.partition("://")[2])[::2]))
    fixed = frozenset(t for t, k in counts.items() if k >= FIXED_SHARE * len(base) and not t.isdigit())
    made = {url: links[url][0] for url in (base if n >= len(base) else rng.sample(base, n))}  # URL → source
    weights = list(itertools.accumulate(links[u][1] for u in base))
    while len(made) < n:
        parent = rng.choices(base, cum_weights=weights)[0]
        url = off_pattern(domain, rng) if rng.random() < off_share else mutate(parent, domain, fixed, rng)
        if url is not None:
            made.setdefault(url, links[parent][0])
    urls = list(made)
    rng.shuffle(urls)
    return urls, [made[url] for url in urls]


Step = Callable[[str, str | None], object]


def dup_check() -> Step:
    """The engine's duplicate check of one URL (``frontier/frontier.py``): fingerprint, then the URL cache."""
    add = UrlCache(CACHE_BYTES).add
    return lambda url, _source: add(_fingerprint(url.encode()))


def windows(step: Step, urls: Sequence[str], sources: Sequence[str | None], size: int) -> list[float]:
    """Seconds per window of ``size`` consecutive calls of ``step``."""
    times = []
    for start in range(0, len(urls), size):
        chunk, froms = urls[start:start + size], sources[start:start + size]
        began = time.perf_counter()
        for url, source in zip(chunk, froms):
            step(url, source)
        times.append(time.perf_counter() - began)
    return times


def measure(subjects: dict[str, tuple[Callable[[], Step], list[str | None]]], urls: list[str],
            size: int) -> dict[str, list[float]]:
    """µs per URL in each window, per subject: the median of ``REPEATS`` passes, the subjects alternating."""
    gc.collect()
    gc.freeze()  # the stream's strings and the models are not the collector's to traverse in every pass
    runs: dict[str, list[list[float]]] = {name: [] for name in subjects}
    for _ in range(REPEATS):
        for name, (make, sources) in subjects.items():
            runs[name].append(windows(make(), urls, sources, size))
    return {name: [1e6 * statistics.median(w) / size for w in zip(*passes)] for name, passes in runs.items()}


def stretches(us: list[float], n: int, size: int) -> dict[int, float]:
    """µs per URL over [0, 10·size), [10·size, 100·size), … up to the last whole window, from the windows."""
    last = n // size * size
    ends = [size * 10**k for k in range(1, 9) if size * 10**k < last] + [last]
    return {end: statistics.fmean(us[start // size:end // size]) for start, end in zip([0, *ends], ends)}


def judged(model: Model, urls: list[str], pages: list[str | None]) -> tuple[Callable[[], Step], list[str | None],
                                                                             dict[str, Any]]:
    """A fresh filter per pass (a reloaded model: cold caches), the sources as its clusters, and its figures."""
    raw = model.to_bytes()
    runtime = ClusterFilter.from_model(model)
    # the cluster of a page is stored with it when it is queued (§2.12): computed once, not timed
    clusters = {page: runtime.cluster(page) for page in set(pages) if page}
    sources = [clusters[p] if p else None for p in pages]
    outcomes = Counter(runtime.judge(u, s)[1] or "kept" for u, s in zip(urls[::10], sources[::10]))
    figures = {"clusters": len(model.nodes), "surviving": len(model.survivors),
               "kept_edges": sum(e.kept for e in model.edges),
               "outcomes": {k: round(v / sum(outcomes.values()), 4) for k, v in sorted(outcomes.items())}}
    return (lambda: ClusterFilter.from_model(Model.from_bytes(raw)).judge), sources, figures


def report(us: dict[str, list[float]], figures: dict[str, dict[str, Any]], n: int, size: int) -> dict[str, Any]:
    """Print and return the stretches with the ±20% test, the models side by side and the filter/dup ratio."""
    at = {name: stretches(u, n, size) for name, u in us.items()}
    flat = {name: all(abs(v / next(iter(a.values())) - 1) <= 0.2 for v in a.values()) for name, a in at.items()}
    mean = {name: statistics.fmean(u) for name, u in us.items()}
    spread = {name: statistics.pstdev(u) / mean[name] for name, u in us.items()}
    main, ends = next(iter(figures)), list(at["dup_check"])
    print(f"µs per URL over the stream up to (windows of {size:,}, each the median of {REPEATS} passes):")
    print(f"{'':>12} " + " ".join(f"{p:>10,}" for p in ends) + f" {'all':>8} {'spread':>6} {'flat':>5}")
    for name, a in at.items():
        print(f"{name:>12} " + " ".join(f"{v:10.3f}" for v in a.values())
              + f" {mean[name]:8.3f} {spread[name]:6.0%} {flat[name]!s:>5}")
    print(f"{'filter/dup':>12} " + " ".join(f"{at[main][p] / at['dup_check'][p]:10.1f}" for p in ends)
          + f" {mean[main] / mean['dup_check']:8.1f}")
    print(f"\n{'model':>12} {'clusters':>8} {'surviving':>9} {'kept edges':>10} {'µs/URL':>7} {'vs main':>7}"
          "  outcomes")
    for name, f in figures.items():
        print(f"{name:>12} {f['clusters']:8d} {f['surviving']:9d} {f['kept_edges']:10d} {mean[name]:7.3f} "
              f"{mean[name] / mean[main]:7.2f}  {f['outcomes']}")
    return {"us_per_url_up_to": {name: {str(p): v for p, v in a.items()} for name, a in at.items()}, "flat": flat,
            "us_per_url": mean, "window_spread": spread, "filter_over_dup": mean[main] / mean["dup_check"],
            "models": {name: {**f, "us_per_url": mean[name], "vs_main": mean[name] / mean[main]}
                       for name, f in figures.items()},
            "curve_us_per_url": {name: [statistics.fmean(u[i:i + 10]) for i in range(0, len(u), 10)]
                                 for name, u in us.items()}}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--model", type=Path, help="a model folder or model.json (default: trained on --site)")
    parser.add_argument("--site", default="blog", help="the lab site whose links make the stream")
    parser.add_argument("--urls", type=int, default=1_000_000, help="distinct URLs in the stream")
    parser.add_argument("--window", type=int, default=1000, help="URLs per timed window (a tenth of the first stretch)")
    parser.add_argument("--train-pages", type=int, default=3000, help="sampled pages per site for in-process models")
    parser.add_argument("--census-pages", type=int, default=200_000, help="census pages whose links seed the stream")
    parser.add_argument("--merge-with", default="forum,books,microblog", help="sites merged into the larger models")
    parser.add_argument("--off-pattern", type=float, default=0.05, help="share of URLs of random shape")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / "clustergraph_filter.json")
    args = parser.parse_args(argv)
    others = [s for s in args.merge_with.split(",") if s and s != args.site]
    web = SocialWeb(SocialParams((args.site, *others)), 80)
    labs = [Lab(web, name) for name in (args.site, *others)]
    samples = [lab.sample(args.train_pages) for lab in labs]
    # the sites' samples interleaved in one sampling order, so that every bin holds all of them
    mixed = [dataclasses.replace(r, seq=r.seq * len(labs) + i) for i, sample in enumerate(samples) for r in sample]
    seeds = [seed for lab in labs for seed in lab.seeds]
    models = {"main": Model.load(args.model) if args.model else train(samples[0], Params(), labs[0].seeds),
              "fine": train(samples[0], FINE, labs[0].seeds)}
    if others:
        models |= {"merged": train(mixed, Params(), seeds), "merged-fine": train(mixed, FINE, seeds)}
    urls, pages = stream(labs[0].links(args.census_pages), labs[0].domain, args.urls, args.off_pattern)
    judges = {name: judged(model, urls, pages) for name, model in models.items()}
    subjects = {name: (make, sources) for name, (make, sources, _) in judges.items()}
    subjects["dup_check"] = (dup_check, pages)
    figures = {name: figures for name, (_, _, figures) in judges.items()}
    at_start = machine()
    result = report(measure(subjects, urls, args.window), figures, len(urls), args.window)
    write_result(args.json, {**vars(args), "json": str(args.json), "model": args.model and str(args.model),
                             "urls": len(urls), "repeats": REPEATS, **result, "machine": at_start})


if __name__ == "__main__":
    main()
