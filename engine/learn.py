"""``crawl learn METHOD`` (the command, shared by every learner) and ``crawl learn clustergraph``, the
sampling crawl that trains a cluster-graph model (issue 13).

The spec is the paper digest (``shared/papers/clustergraph.md``, §2.2 and §2.13); the learning
itself is pure code in ``frontier/clustergraph/``. A learn run:

1. **Scope**: one site per run, the registrable domain of the seeds (the last two labels of
   their host: ``bob.blog.test`` → ``blog.test``; seeds of two sites are a config error).
   ``scope.mode = "host"`` or ``"domain"`` narrows it to what ``crawl run`` would take
   (``frontier/scope.py``). Out-of-scope links are dropped before anything else sees them.
2. **Pilot**: a breadth-first crawl of ``pilot_pages`` pages from the seeds estimates K̄, the
   mean number of distinct in-scope outlinks of its pages answered 200, hence
   ξ = ``xi_for(K̄)`` unless ``--set xi=…`` fixes it. The pilot's pages stay in memory, so the
   sampler never downloads a page twice; they count toward ``--max-pages`` all the same.
3. **Sampling** (Alg. 1, ``frontier/clustergraph/sampler.py``): ``batch`` draws per round,
   fetched at once (``engine/learn_fetch.py``: robots.txt once per host and obeyed, host and IP
   delays, no redirect followed), until ``--max-pages`` page downloads or the sampler runs dry.
   A URL robots.txt disallows is not downloaded: the sampler is told it failed (it stays in V)
   and the sample has no record of it.
4. **Training**: ``MODEL_DIR/sample.jsonl`` (one ``SampleRecord`` per page the sampler drew and
   fetched, with its text blocks and media type for rules T and F (``frontier/clustergraph/thin.py``,
   ``feeds.py``), in draw order, written as they come, so an interrupted run leaves a sample to
   train from), ``MODEL_DIR/sampling.json`` (K̄, ξ and the counters), then
   ``train`` → ``Model.save``: ``model.json``, ``report.md``, ``graph.svg``.

``--from-sample FILE`` runs step 4 alone on a saved sample, with no network: the same sample
and parameters give a byte-identical ``model.json`` (the estimated ξ goes to ``sampling.json``;
the model's ``xi`` stays as set, 0 meaning "estimated"). Writes only ``MODEL_DIR``; reads the seeds
file, crawl.toml and, through ``engine/learn_fetch.py``, the site.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import shutil
import sys
import time
from collections import Counter, deque
from collections.abc import Callable, Coroutine, Sequence
from pathlib import Path
from typing import Any, TypeVar

import orjson

from engine import config as configuration
from engine.config import Config, ConfigError
from engine.learn_fetch import Page, SiteClient
from frontier.clustergraph.model import Model, Params
from frontier.clustergraph.sampler import Sampler, xi_for
from frontier.clustergraph.thin import Blocks, text_blocks
from frontier.clustergraph.train import SampleRecord, read_sample, train
from frontier.clustergraph.urls import in_scope
from frontier.learned_params import LearnedParams
from frontier.scope import Scope
from frontier.urls import canonicalize, host_of, split

P = TypeVar("P", bound=LearnedParams)
Sampled = tuple[list[Any], dict[str, Any]]
"""what a sampling crawl gives: its records and the figures of ``sampling.json``"""


class LearnError(Exception):
    """The site gave nothing to learn from (no seed page could be fetched)."""


# -- the command line --------------------------------------------------------------------------


def model_params(assignments: Sequence[str], kind: type[P] = Params) -> P:  # type: ignore[assignment]
    """A learner's parameters (``kind``, clustergraph's by default) with the ``KEY=VALUE`` changes,
    converted and range-checked by the parameters class itself."""
    settings: dict[str, str] = {}
    for assignment in assignments:
        key, sep, text = assignment.partition("=")
        if not sep or not key.strip():
            raise ConfigError(key.strip() or assignment, "expected KEY=VALUE, e.g. tau=0.5")
        settings[key.strip()] = text.strip()
    try:
        return kind.parse(settings)
    except ValueError as e:  # "key: problem", from the parameters class
        key, _, problem = str(e).partition(": ")
        raise ConfigError(key, problem) from None


def split_settings(assignments: Sequence[str]) -> tuple[list[str], list[str]]:
    """``--set``s → (model parameters ``KEY=VALUE``, crawl.toml overrides ``section.key=VALUE``)."""
    params: list[str] = []
    crawl: list[str] = []
    for assignment in assignments:
        (crawl if "." in assignment.partition("=")[0] else params).append(assignment)
    return params, crawl


def crawl_config(args: argparse.Namespace, overrides: Sequence[str]) -> Config:
    flags = [f"network.proxy={orjson.dumps(args.proxy).decode()}"] if args.proxy is not None else []
    if args.dns is not None:
        flags.append(f"dns.servers={orjson.dumps([args.dns]).decode()}")
    return configuration.load(args.config, [*flags, *overrides])


def site_of(seeds: Sequence[str]) -> str:
    """The one registrable domain of the seeds: the last two labels of their hosts."""
    sites = sorted({".".join(host_of(split(seed)[0]).split(".")[-2:]) for seed in seeds})
    if len(sites) != 1:
        raise ConfigError("--seeds", f"one site per learn run, got {', '.join(sites) or 'no seed'}")
    return sites[0]


def scope_test(config: Config, seeds: Sequence[str], site: str) -> Callable[[str], bool]:
    """In the site, and in what ``scope.mode`` lets ``crawl run`` take, if narrower."""
    scope = Scope(config.scope.mode, seeds)
    return lambda url: in_scope(url, site) and scope.allows(split(url)[0])


def canonical_seeds(lines: Sequence[str], sort_query: bool) -> list[str]:
    """The seed file's URLs, canonical and each once."""
    seeds = []
    for line in lines:
        seed = canonicalize(line, sort_query=sort_query)
        if seed is None:
            raise ConfigError("--seeds", f"not an http(s) URL: {line!r}")
        seeds.append(seed)
    if not seeds:
        raise ConfigError("--seeds", "no seed URL in the file")
    return list(dict.fromkeys(seeds))


# -- the sampling crawl ------------------------------------------------------------------------


@dataclasses.dataclass
class Sampling:
    """What the sampling crawl gave: the sample, and the figures ``sampling.json`` keeps."""

    records: list[SampleRecord]
    mean_out_degree: float
    xi: float
    pilot_pages: int
    downloads: int = 0
    robots_fetches: int = 0
    disallowed: int = 0
    failed: int = 0
    withdrawn: int = 0
    reseeds: int = 0
    errors: dict[str, int] = dataclasses.field(default_factory=dict)

    def figures(self) -> dict[str, Any]:
        figures = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "records"}
        return figures | {"pages": len(self.records)}


async def _fetch_all(client: SiteClient, urls: Sequence[str], cache: dict[str, Page]) -> list[Page | None]:
    """The pages of ``urls``, fetched at once (one at a time per host), the cached ones not again."""

    async def one(url: str) -> Page | None:
        return cache[url] if url in cache else await client.fetch(url)

    return list(await asyncio.gather(*(one(url) for url in urls)))


async def pilot(client: SiteClient, seeds: Sequence[str], pages: int, budget: int, batch: int) -> dict[str, Page]:
    """A breadth-first crawl of up to ``pages`` pages (and ``budget`` downloads) from the seeds."""
    queue = deque(seeds)
    seen = set(seeds)
    fetched: dict[str, Page] = {}
    while queue and len(fetched) < pages and client.downloads < budget:
        room = min(batch, len(queue), pages - len(fetched), budget - client.downloads)
        urls = [queue.popleft() for _ in range(room)]
        for url, page in zip(urls, await _fetch_all(client, urls, fetched)):
            if page is None:  # robots.txt disallows it
                continue
            fetched[url] = page
            fresh = [link for link in page.outlinks if link not in seen]
            seen.update(fresh)
            queue.extend(fresh)
    return fetched


def mean_out_degree(pages: Sequence[Page], seeds: Sequence[str]) -> float:
    """K̄ over the pages answered 200; a :class:`LearnError` if none was."""
    counts = [len(page.outlinks) for page in pages if page.status == 200]
    if not counts:
        tried = {page.url: page.status for page in pages}
        statuses = ", ".join(f"{seed} ({_outcome(tried.get(seed))})" for seed in seeds)
        raise LearnError(f"no seed page could be fetched: {statuses}")
    return sum(counts) / len(counts)


def _outcome(status: int | None) -> str:
    return "disallowed by robots.txt" if status is None else "no response" if status == 0 else f"status {status}"


async def sample_site(client: SiteClient, seeds: Sequence[str], params: Params, max_pages: int,
                      keep: Callable[[SampleRecord], None]) -> Sampling:
    """Steps 2 and 3 of the module docstring; ``keep`` sees each record as soon as it is made."""
    cache = await pilot(client, seeds, params.pilot_pages, max_pages, params.batch)
    k_bar = mean_out_degree(list(cache.values()), seeds)
    xi = params.xi if params.xi > 0 else xi_for(k_bar, params.alpha or None)
    sampler = Sampler(seeds, xi, seed=params.seed)
    done = Sampling([], k_bar, xi, pilot_pages=len(cache))
    while client.downloads < max_pages:
        urls: list[str] = []
        while len(urls) < min(params.batch, max_pages - client.downloads) and (url := sampler.draw()) is not None:
            urls.append(url)
        if not urls:
            break  # U and W are empty: the site has nothing more to offer
        for url, page in zip(urls, await _fetch_all(client, urls, cache)):
            if page is None:
                done.disallowed += 1
                sampler.record(url, None)
                continue
            record = SampleRecord(len(done.records), url, page.final_url, page.status, page.outlinks, _blocks(page),
                                  page.media_type)
            done.failed += record.failed
            sampler.record(url, None if record.failed else record.outlinks)
            done.records.append(record)
            keep(record)
    done.downloads, done.robots_fetches = client.downloads, client.robots_fetches
    done.withdrawn, done.reseeds, done.errors = sampler.withdrawn, sampler.reseeds, dict(client.errors)
    return done


def _blocks(page: Page) -> Blocks | None:
    """The page's text for rule T: read from a 200 HTML page, none of its own for a redirect."""
    if page.document is not None:
        return text_blocks(page.document)
    return () if 300 <= page.status < 400 else None


# -- the command -------------------------------------------------------------------------------


def summary(model: Model, sampling: dict[str, Any] | None, seconds: float, out: Path) -> str:
    """The few lines printed at the end of a learn run."""
    lines = []
    if sampling is not None:
        lines.append(f"pages fetched: {sampling['downloads']} (+{sampling['robots_fetches']} robots.txt), "
                     f"sample: {sampling['pages']}, failed: {sampling['failed']}, "
                     f"disallowed: {sampling['disallowed']}")
        lines.append(f"K̄ = {sampling['mean_out_degree']:.1f} (pilot of {sampling['pilot_pages']} pages), "
                     f"ξ = {sampling['xi']:.4f}, withdrawn: {sampling['withdrawn']}, re-seeds: {sampling['reseeds']}")
    kept = sum(1 for edge in model.edges if edge.kept)
    reasons = Counter(model.deleted.values())
    deleted = ", ".join(f"{reason} {n}" for reason, n in sorted(reasons.items())) or "none"
    removed = len(model.clusters) - len(model.nodes)
    lines.append(f"clusters: {len(model.survivors)} kept of {len(model.nodes)} ({removed} small patterns removed "
                 f"first), edges kept: {kept} of {len(model.edges)}, clusters deleted: {deleted}")
    lines.append(f"warnings: {len(model.warnings)}; {seconds:.1f} s")
    lines.append(f"model: {out}/model.json, report: {out}/report.md, picture: {out}/graph.svg, sample: {out}/sample.jsonl")
    return "\n".join(f"learn: {line}" for line in lines)


async def sampling_crawl(inputs: _Inputs, max_pages: int, sample_path: Path,
                         sample: Callable[[SiteClient, Callable[[Any], None]], Coroutine[Any, Any, Sampled]],
                         *, documents: bool = False, every: int = 1000) -> Sampled:
    """A learner's sampling crawl through a fresh :class:`SiteClient` (``documents``: with each
    page's parsed tree): ``sample(client, keep)`` hands each record (``seq``, ``to_json()``) to
    ``keep``, which writes it to ``sample_path`` as it comes (an interrupted run leaves a
    sample ``--from-sample`` can train from) and says so every ``every`` records."""
    say = inputs.config.engine.progress != "off"
    client = SiteClient(inputs.config, scope_test(inputs.config, inputs.seeds, inputs.site), documents=documents)
    try:
        with sample_path.open("w", encoding="utf-8") as out:

            def keep(record: Any) -> None:
                out.write(record.to_json() + "\n")
                if say and (record.seq + 1) % every == 0:
                    print(f"learn: {record.seq + 1} pages sampled, {client.downloads} of {max_pages} downloaded",
                          file=sys.stderr)

            return await sample(client, keep)
    finally:
        await client.close()


async def _crawl(inputs: _Inputs, max_pages: int, sample_path: Path) -> Sampled:
    async def sample(client: SiteClient, keep: Callable[[Any], None]) -> Sampled:
        sampling = await sample_site(client, inputs.seeds, inputs.params, max_pages, keep)
        return sampling.records, sampling.figures()

    return await sampling_crawl(inputs, max_pages, sample_path, sample, documents=True)


def _train(records: list[Any], inputs: _Inputs, figures: dict[str, Any] | None, seconds: float, out: Path) -> str:
    model = train(records, inputs.params, inputs.seeds)
    model.save(out)
    return summary(model, figures, seconds, out)


@dataclasses.dataclass(frozen=True)
class Method:
    """One learner of ``crawl learn METHOD``: its parameters, how it reads a saved sample, how it
    samples a site (records written to the sample file as they come; the records and the
    figures of ``sampling.json``), and how it trains, saves and sums up a model."""

    params: type[Any]
    read_sample: Callable[[Path], list[Any]]
    sample: Callable[[_Inputs, int, Path], Coroutine[Any, Any, Sampled]]
    train: Callable[[list[Any], _Inputs, dict[str, Any] | None, float, Path], str]


CLUSTERGRAPH = Method(Params, read_sample, _crawl, _train)


@dataclasses.dataclass(frozen=True)
class _Inputs:
    params: Any  # the method's parameters
    config: Config
    seeds: list[str]  # canonical
    site: str
    sample: list[Any] | None  # --from-sample's records


def _inputs(args: argparse.Namespace, seed_lines: Sequence[str], learner: Method) -> _Inputs:
    """Everything a learn run starts from, checked; ConfigError naming the key otherwise."""
    param_sets, crawl_sets = split_settings(args.set)
    params = model_params(param_sets, learner.params)
    config = crawl_config(args, crawl_sets)
    seeds = canonical_seeds(seed_lines, config.urls.sort_query)
    site = site_of(seeds)
    if args.from_sample is None:
        if args.max_pages is None or args.max_pages < 1:
            raise ConfigError("--max-pages", "a positive number of pages is required (or --from-sample FILE)")
        return _Inputs(params, config, seeds, site, None)
    try:
        return _Inputs(params, config, seeds, site, learner.read_sample(args.from_sample))
    except OSError as e:
        raise ConfigError("--from-sample", f"cannot read {args.from_sample}: {e.strerror}") from None
    except (ValueError, KeyError, TypeError) as e:  # not JSON lines of sample records
        raise ConfigError("--from-sample", f"{args.from_sample} is not a sample: {e!r}") from None


def learn(args: argparse.Namespace, seed_lines: Sequence[str], learner: Method = CLUSTERGRAPH) -> int:
    """``crawl learn METHOD`` with the lines of the seeds file and the method's learner: 0 on success,
    2 on a config error (one line naming the key), 1 when nothing could be learnt, 130 when interrupted."""
    started = time.monotonic()
    try:
        inputs = _inputs(args, seed_lines, learner)
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    out: Path = args.out
    out.mkdir(parents=True, exist_ok=True)
    sample_path = out / "sample.jsonl"
    figures: dict[str, Any] | None = None
    if inputs.sample is not None:
        records = inputs.sample
        if args.from_sample.resolve() != sample_path.resolve():
            shutil.copyfile(args.from_sample, sample_path)
    else:
        try:
            records, figures = asyncio.run(learner.sample(inputs, args.max_pages, sample_path))
        except LearnError as e:
            sys.stderr.write(f"crawl: error: {e}\n")
            return 1
        except KeyboardInterrupt:
            sys.stderr.write(f"crawl: learn interrupted; the sample so far is {sample_path} (--from-sample trains from it)\n")
            return 130
        figures = figures | {"site": inputs.site, "seeds": inputs.seeds}
        (out / "sampling.json").write_bytes(orjson.dumps(figures, option=orjson.OPT_INDENT_2 | orjson.OPT_SORT_KEYS))
    try:
        print(learner.train(records, inputs, figures, time.monotonic() - started, out), file=sys.stderr)
    except LearnError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 1
    return 0
