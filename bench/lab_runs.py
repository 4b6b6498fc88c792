"""Learn-then-crawl runs on one social-lab site, each against a fresh lab server: the shared
machinery of the strategy evaluations (``bench/clustergraph_eval.py``, ``bench/source_eval.py``).

A :class:`Variant` names a site as the crawler meets it (the lab's seed and dialect; another
seed plus a dialect is a held-out site whose URLs were never seen while tuning). :func:`learn`
runs ``crawl learn METHOD`` and :func:`crawl` runs ``crawl run`` with a policy's arguments,
both as child processes against the variant served alone (:func:`serving`), with one agent and
no politeness delay (:data:`SCHEDULER`) so that every method meets the same scheduler. Each
returns what the server logged, read back with :func:`page_records`; with ``reuse`` a finished
run kept in its folder is read back instead of run again.
"""

from __future__ import annotations

import argparse
import signal
import sys
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from bench.invitro import read_log
from bench.invitro.process import spawn
from bench.invitro.social.web import SocialParams
from bench.runner import CRAWLER_SETTINGS, RESULTS_DIR, checked, run_child

SITES = ("blog", "forum", "books", "microblog")

SCHEDULER = ("engine.processes=1", "politeness.host_delay=0", "politeness.ip_delay=0", "scope.max_urls_per_shape=0")
"""one agent and no delay: every method sees the same scheduler (clustergraph digest §2.12); no URL-shape
budget: a lab site has thousands of pages per host whose URLs differ only in an id (the forum's 5,000
profiles ``/u/N``), which the default budget of 1,000 such URLs per host would cut for every method"""
FLUSH = ("frontier.sieve_flush_interval=0.1",)
"""for the crawls (not the learning runs, whose samples stay as they were): forced sieve flushes 0.1 s
apart at least, not 1 s. A lab crawl fetches some 100 pages a second, so the default floor kept the
links found in its first second (a third of a 340-page crawl) in the sieve while the fetchers took
whatever was queued, which a crawl that ranks its URLs then spent on its worst-ranked ones (the
held-out blog's profile task: 60 of 340 downloads); BUbiNG's other bound, ten times a flush's cost,
still holds. Every method of a comparison meets it, as :data:`SCHEDULER`."""
SCORING_PORT = 80
"""the port of the scorer's copy of the lab: truth depends on host and target only, and the models ignore ports"""


@dataclass(frozen=True, slots=True)
class Variant:
    """One site as the crawler meets it: the lab's seed and dialect (0: the site as developed)."""

    site: str
    seed: int
    dialect: int

    @property
    def label(self) -> str:
        return self.site if (self.seed, self.dialect) == (1, 0) else f"{self.site}/seed{self.seed}-dialect{self.dialect}"

    def params(self) -> SocialParams:
        knobs = {self.site: {"dialect": float(self.dialect)}} if self.dialect else {}
        return SocialParams((self.site,), self.seed, knobs)

    def web_args(self) -> list[str]:
        args = ["--social", self.site, "--social-seed", str(self.seed)]
        return args + (["--site-knob", f"{self.site}.dialect={self.dialect}"] if self.dialect else [])


def variants(sites: Sequence[str], held_out: int) -> list[Variant]:
    """The sites as developed, then ``held_out`` held-out variants of each (seed 100+k, dialect k)."""
    developed = [Variant(site, 1, 0) for site in sites]
    return developed + [Variant(v.site, 100 + k, k) for k in range(1, held_out + 1) for v in developed]


@dataclass(slots=True)
class Served:
    """A running lab server for one variant: where it is, its seeds, and its log."""

    info: dict[str, Any]
    log: Path
    seeds: Path


@contextmanager
def serving(variant: Variant, folder: Path) -> Iterator[Served]:
    """The variant's site served alone until the block ends; the log is complete afterwards."""
    log = folder / "requests.jsonl"
    process, info = spawn(folder, [*variant.web_args(), "--no-proxy", "--log", str(log)])
    seeds = folder / "seeds.txt"
    seeds.write_text("\n".join(info["sites"][variant.site]["seeds"]) + "\n")
    try:
        yield Served(info, log, seeds)
    finally:
        process.send_signal(signal.SIGTERM)
        process.wait(timeout=30)


def page_records(log: Path, budget: int | None = None) -> list[Any]:
    """The log's page requests (robots.txt excluded) in the order they started, the first ``budget``."""
    records = sorted((r for r in read_log(log) if r.target != "/robots.txt"), key=lambda r: r.start)
    return records[:budget] if budget else records


def learn(variant: Variant, folder: Path, method: str, pages: int, settings: Sequence[str],
          reuse: bool) -> dict[str, Any]:
    """``crawl learn METHOD`` on the variant with ``pages`` downloads: the model folder and the
    training downloads (from the server's log) and cost. ``settings`` are extra arguments."""
    model = folder / "model"
    log = folder / "web" / "requests.jsonl"
    if reuse and (model / "model.json").exists() and log.exists():
        return {"model": model, "downloads": len(page_records(log)), "cpu_seconds": None, "wall_seconds": None}
    with serving(variant, folder / "web") as web:
        cmd = [sys.executable, "-m", "engine.cli", "learn", method, "--seeds", str(web.seeds),
               "--dns", web.info["dns"], "--max-pages", str(pages), "--out", str(model), *settings]
        for setting in (*CRAWLER_SETTINGS[:1], *SCHEDULER[1:]):
            cmd += ["--set", setting]
        stderr = folder / "learn.stderr"
        cost = checked(run_child(cmd, timeout=1800, stderr=stderr), "crawl learn", stderr)
    return {"model": model, "downloads": len(page_records(web.log)), "cpu_seconds": cost.cpu_seconds,
            "wall_seconds": cost.wall_seconds}


def crawl(variant: Variant, folder: Path, budget: int, policy: Sequence[str], settings: Sequence[str],
          reuse: bool) -> tuple[list[Any], dict[str, Any]]:
    """One crawl of ``budget`` pages with the ``policy`` arguments of ``crawl run`` (none:
    breadth-first); returns its page records and its stats.json."""
    out = folder / "out"
    log = folder / "web" / "requests.jsonl"
    if reuse and (out / "stats.json").exists() and log.exists():
        return page_records(log, budget), orjson.loads((out / "stats.json").read_bytes())
    with serving(variant, folder / "web") as web:
        cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(web.seeds), "--out", str(out),
               "--dns", web.info["dns"], "--max-pages", str(budget), *policy]
        for setting in (*CRAWLER_SETTINGS, *SCHEDULER, *FLUSH, *settings):
            cmd += ["--set", setting]
        stderr = folder / "crawl.stderr"
        checked(run_child(cmd, timeout=1800, stderr=stderr), f"crawl run ({' '.join(policy) or 'bfs'})", stderr)
    return page_records(web.log, budget), orjson.loads((out / "stats.json").read_bytes())


def lab_arguments(parser: argparse.ArgumentParser, name: str) -> None:
    """The options every lab evaluation takes; ``--json`` and ``--plot`` default to ``RESULTS_DIR/name.*``."""
    parser.add_argument("--sites", default=",".join(SITES), help="comma-separated lab sites")
    parser.add_argument("--variants", type=int, default=1,
                        help="held-out variants per site (seed 100+k, dialect k); 0 = the sites as developed only")
    parser.add_argument("--set", action="append", default=[], help="crawl.toml override for the crawls")
    parser.add_argument("--keep", type=Path, help="keep the crawls' folders here (default: a temporary folder)")
    parser.add_argument("--reuse", action="store_true",
                        help="with --keep: read back models and crawls already there instead of running them again")
    parser.add_argument("--held-out-only", action="store_true", help="only the held-out variants")
    parser.add_argument("--json", type=Path, default=RESULTS_DIR / f"{name}.json")
    parser.add_argument("--plot", type=Path, default=RESULTS_DIR / f"{name}.png")


def each_variant(args: argparse.Namespace, evaluate: Callable[[Variant, Path], dict[str, Any]],
                 show: Callable[[dict[str, Any]], None]) -> list[dict[str, Any]]:
    """``evaluate`` every variant :func:`lab_arguments` chose, each in a folder of its own (under
    ``--keep``, else a temporary one), showing each result as it comes."""
    chosen = variants(args.sites.split(","), args.variants)
    if args.held_out_only:
        chosen = [v for v in chosen if v.dialect]
    results = []
    with tempfile.TemporaryDirectory(prefix="lab-eval-") as tmp:
        root = args.keep or Path(tmp)
        for variant in chosen:
            result = evaluate(variant, root / variant.label.replace("/", "-"))
            show(result)
            sys.stdout.flush()
            results.append(result)
    return results
