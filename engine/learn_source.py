"""``crawl learn source``: the sampling crawl that trains a SOUrCe site model (issue 14).

The spec is the paper digest (``shared/papers/source.md``, §2.4–2.5); the learning itself is
pure code in ``frontier/source/``. A learn run, driven by ``engine/learn.py`` (the command
line, ``--set``, ``--from-sample``, the exit codes, shared with ``crawl learn clustergraph``):

1. **Scope**: the registrable domain of the seeds, subdomains included (a host per user is
   one site), narrowed by ``scope.mode`` as ``crawl run`` would; the link groups keep only
   links of that domain.
2. **Sampling** (``frontier/source/sampler.py``): breadth-first from the seeds, one random
   unseen link per (page, Apath) enqueued (``--set sampler=bfs``: every link), through
   ``engine/learn_fetch.py`` (robots.txt obeyed, host and IP delays). Redirects are followed
   (up to five hops, each a download) and the final page is the one sampled (A30). A page
   that is not 200 HTML, disallowed or unreachable is not part of D. The run stops after
   ``--max-pages`` downloads or when the queue is empty; every page of D becomes a
   :class:`~frontier.source.train.SamplePage` in ``MODEL_DIR/sample.jsonl`` as it comes.
3. **Training** (``frontier/source/train.py``) → ``model.json``, ``matrix.npy``,
   ``report.md``, ``graph.svg``; ``sampling.json`` keeps the sampling's figures.

Writes only ``MODEL_DIR``; reads the seeds file, crawl.toml and, through the client, the site.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from engine.learn import LearnError, Method, Sampled, _Inputs, sampling_crawl
from engine.learn_fetch import Page, SiteClient
from engine.pipeline import REDIRECTS
from frontier.source.features import link_groups, xpath_bag
from frontier.source.model import Model, Params
from frontier.source.sampler import SourceSampler
from frontier.source.train import SamplePage, read_sample, train

MAX_HOPS = 5


async def _follow(client: SiteClient, page: Page | None, budget: int) -> Page | None:
    """The page a redirect chain ends on (each hop a download, in scope, within ``budget``)."""
    hops = 0
    while (page is not None and page.status in REDIRECTS and page.final_url != page.url and hops < MAX_HOPS
           and client.downloads < budget and client.in_scope(page.final_url)):
        page = await client.fetch(page.final_url)
        hops += 1
    return page


async def sample_source(client: SiteClient, inputs: _Inputs, max_pages: int,
                        keep: Callable[[Any], None]) -> Sampled:
    """Step 2 of the module docstring; ``keep`` sees each page of D as soon as it is fetched."""
    params: Params = inputs.params
    sampler = SourceSampler(inputs.seeds, max_pages, params.seed, mode=params.sampler)  # type: ignore[arg-type]
    records: list[SamplePage] = []
    known: set[str] = set()
    outcomes: Counter[str] = Counter()
    sort_query = inputs.config.urls.sort_query
    while client.downloads < max_pages and (url := sampler.next_url()) is not None:
        page = await _follow(client, await client.fetch(url), max_pages)
        if page is None or page.document is None:
            outcomes["disallowed" if page is None else "not_html" if page.status == 200 else f"status_{page.status}"] += 1
            sampler.failed(url)
            continue
        groups = link_groups(page.document, page.url, inputs.site, sort_query=sort_query)
        sampler.record(url, page.url, groups)
        if page.url in known:  # a redirect onto a page of D already: only the redirect is new
            record = SamplePage(len(records), url, page.url, {}, {}, redirect_only=True)
        else:
            known.add(page.url)
            record = SamplePage(len(records), url, page.url, dict(xpath_bag(page.document, params.body_only, params.classes)), groups)
        records.append(record)
        keep(record)
    if not known:
        raise LearnError(f"no seed page gave an HTML page to learn from: {dict(outcomes) or 'nothing fetched'}")
    figures = {"downloads": client.downloads, "robots_fetches": client.robots_fetches, "pages": len(known),
               "not_sampled": dict(sorted(outcomes.items())), "errors": dict(client.errors),
               "sampler": params.sampler}
    return records, figures


async def _crawl(inputs: _Inputs, max_pages: int, sample_path: Path) -> Sampled:
    async def sample(client: SiteClient, keep: Callable[[Any], None]) -> Sampled:
        return await sample_source(client, inputs, max_pages, keep)

    return await sampling_crawl(inputs, max_pages, sample_path, sample, documents=True, every=250)


def summary(model: Model, figures: dict[str, Any] | None, seconds: float, out: Path) -> str:
    """The few lines printed at the end of a learn run."""
    lines = []
    if figures is not None:
        lines.append(f"pages fetched: {figures['downloads']} (+{figures['robots_fetches']} robots.txt), "
                     f"sample: {figures['pages']}, not sampled: {figures['not_sampled'] or 'none'}")
    outliers = next((c.size for c in model.clusters if c.label == -1), 0)
    how = "set" if model.params.eps else "fallback" if model.eps.fallback else f"estimated, {model.eps.bins} bins"
    lines.append(f"|D| = {len(model.pages)}, |V| = {len(model.vocabulary)}, eps = {model.eps.eps:.4f} ({how}), "
                 f"clusters: {model.n_clusters}, outliers: {outliers}, navigation rows: {len(model.table)}")
    lines.append(f"warnings: {len(model.warnings)}; {seconds:.1f} s")
    lines.append(f"model: {out}/model.json, report: {out}/report.md, picture: {out}/graph.svg, sample: {out}/sample.jsonl")
    return "\n".join(f"learn: {line}" for line in lines)


def _train(records: list[Any], inputs: _Inputs, figures: dict[str, Any] | None, seconds: float, out: Path) -> str:
    try:
        model = train(records, inputs.params, inputs.site)
    except ValueError as e:
        raise LearnError(str(e)) from None
    model.save(out)
    return summary(model, figures, seconds, out)


SOURCE = Method(Params, read_sample, _crawl, _train)
