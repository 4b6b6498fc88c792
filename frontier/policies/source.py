"""The SOUrCe policies: rank every link by where it stands on its page (Xu, Gao & Callan).

Digest ``/work/shared/papers/source.md`` §2.9, §2.12 and §3. The site model is written offline
by ``crawl learn source`` (``frontier/source/``); these policies read it once, in ``__init__``.

* ``source-ucc`` (crawling-for-UCC, §3.2): Score(C) = Info·DSim·Balance with Info from HITS
  over A (α 0.5, diagonal zeroed), Balance = 1 − the share of harvested pages in C, which
  changes as the crawl goes; options ``info``, ``dsim``, ``balance`` switch a factor off
  (Table 5's ablations). Ours, option ``novelty`` (``false``: the paper's form): a lane's
  score is multiplied by the share of its anchor role's downloads that brought a text block
  no earlier download had, smoothed, and updated by the host's own downloads of that role
  (a Beta update weighing the role's share as ``host_prior`` downloads), over ``enough``
  (1) and at most 1 (:mod:`frontier.source.yields`); a redirect or an error brings nothing. Where a cluster
  mixes useful and useless pages of one layout, no row parts them, but the links of one
  role may lead to the useless ones only (the lab's blog: empty calendar days through
  ``calendar-nav``, reply forms, print views), and one host may answer a role's links with
  redirects only (the blog's ``www`` and its old-scheme author links).
* ``source-target`` (crawling-for-target, §3.3), with ``target_examples`` (``crawl run
  --target-example URL``, repeatable): pages of the training sample of the wanted type; the
  cluster t of the paper's one example is the target, authority = the indicator of t,
  hub ∝ A[:, t], Info = 0.8·a + 0.2·h, Score(C) = Info. Several examples make the union of
  their clusters the target (A27: a type whose pages come in several layouts, such as A/B
  templates or a template per user, spreads over several clusters). An example that is not
  a page of the sample is refused (the model knows the layout of no other page: pick one
  among the report's sample URLs); one that DBSCAN left an outlier is classified among the
  clustered pages (A27). Ours, option ``kin`` (default 0.8): every cluster that the site links
  into the way it links into the examples' clusters (a cosine ≥ ``kin`` between its in-link
  profile per anchor role and the centroid of the examples', :mod:`frontier.source.kin`) is a
  target too, so that the wanted type's other layouts are not mere hubs; ``kin`` above 1 keeps
  the examples' clusters only.
  Four more rules of ours, each an option that ``false`` switches off (the paper's form):
  ``roles``, a link's target part (Σ over target clusters of P·Score) is weighted by the share
  of the site's training links of its anchor role that led into a target cluster, so a row
  into a cluster that mixes types ranks by what its role usually leads to; ``backoff``, a link
  whose (cluster, Apath) key has no row takes the rows of its anchor role pooled over the
  clusters (the digest's §2.12 back-off, by role: an Apath carries its layout's tag path), in
  a lane of its own past the table's; ``novelty``, a lane's score is multiplied by the
  smoothed share of its role's downloads whose body no earlier download had (an exact
  digest), so that of two anchor roles reaching the same pages (a page-number widget and an
  "older" cursor) the one that keeps fetching aliases falls behind as the crawl goes;
  ``reach``, the target part of a role whose training links into the targets never reached an
  example page although, at the rate of all roles, they should have reached ``reach_evidence``
  (3) of them is demoted (:func:`frontier.source.kin.example_reach`, read from the
  model folder's ``sample.jsonl``): such a role leads into a cluster where DBSCAN did not part
  the wanted type from another (the blog's tag lists among its profiles). The
  lanes each URL was queued in and the digests of the bodies are kept in memory (a set of
  16-byte digests, a dict of the queued URLs), the role counts in ``state()``.

Nothing is filtered: every link the crawl meets is queued, its score only decides when
(§2.12, AT-16). Ranking, through the policy seam's lanes: each (cluster, Apath) row of the
navigation table is a lane (2 + its row index); lane 0 holds the seeds and redirect targets
(the page already chosen: first), lane 1 the links under a key with no row (score 0, A11).
``lane_rank`` is −Score(u) of the lane's key (eq. 12) under the current cluster scores, so
the frontier takes the best-scored URL of each host, and the host whose best is best among
those polite now (on one IP, the workbench's ranked choice; across IPs, the todo ring);
``site_of`` puts the model's site (its hosts and subdomains) behind the engine's rank gate,
so no host of the site is fetched while a better-scored one is: the order holds across a
site's hosts (a blog's user subdomains), not only within one. Balance is re-applied at
every choice, as the digest's per-key buckets do (§3.5); within a lane, URLs keep their
discovery order (FIFO among ties).

Each fetched 200 HTML page is classified once (``on_fetched``: its Xpath bag, kNN over the
training pages; a page of an unseen layout is assigned to its nearest cluster or to O, never
refused), counted for Balance, and its link groups are read from the document; a link found
under several keys takes the best-scored one (A28). Links reach ``priority`` canonical, as the
link groups are (the query sorted, the crawl's default ``urls.sort_query``).

Counters (``counters()``, kept in ``state()`` so that Balance survives a resume):
``cluster_pages`` (classified pages per cluster, ``O`` for outliers) and ``links_by_lane``
(``seed``, ``no_row``, ``row``: a row or a role's back-off); ``source-target`` adds
``row_downloads`` (``new``, ``repeated``: downloads of a row's links by novelty), ``source-ucc``
``role_downloads`` and ``role_new`` (per anchor role, downloads of its links and those that
brought a new text block).
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import orjson

from frontier.page import FetchedPage, LinkContext
from frontier.policy import CrawlPolicy, PolicyError, Revisit
from frontier.urls import canonicalize, host_of, split

if TYPE_CHECKING:  # imported when a model is loaded: looking up any policy imports this module
    from frontier.source.model import Model

SEED_LANE = 0
NO_ROW_LANE = 1
FIRST_ROW_LANE = 2
MAX_LANE = 65535


class _Source(CrawlPolicy):
    """What both SOUrCe policies share: classify pages, key their links, rank lanes by score."""

    wants_document = True
    ranks_urls = True
    needs_model = True

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        self.site_model = load_model(model, self.name)
        self.n = self.site_model.n_clusters
        self.harvested = np.zeros(self.n + 1)  # pages per cluster index, O last
        self._row_scores = np.zeros(0)
        self._stale = True
        self._lanes: dict[str, int] = {}  # the links of the page shown last → their lane
        self._redirect: tuple[str, str] | None = None
        self.links: Counter[str] = Counter()
        # what a subclass learns per anchor role as the crawl goes (novelty): the role of each score
        # position, and the row lane each URL was queued in, until it is fetched
        self.novelty = False
        self.roles: list[str] = []
        self._role_index = np.zeros(0, dtype=np.int64)
        self._queued: dict[str, int] = {}

    def _index_roles(self, position_roles: Sequence[str]) -> None:
        """Index the anchor role of each score position (a table row, then any role's back-off)."""
        self.roles = sorted(set(position_roles))
        index = {role: i for i, role in enumerate(self.roles)}
        self._role_index = np.array([index[role] for role in position_roles], dtype=np.int64)

    def _role_fetched(self, url: str) -> int | None:
        """The role index of the row lane ``url`` was queued in, None for a seed, a redirect target or no row."""
        lane = self._queued.pop(url, None)
        return None if lane is None else int(self._role_index[lane - FIRST_ROW_LANE])

    # the score of a cluster, per policy
    def cluster_scores(self) -> np.ndarray:
        raise NotImplementedError

    def row_factors(self) -> np.ndarray | None:
        """A factor per navigation-table row that multiplies its links' score; None: all 1."""
        return None

    def backoff(self, apath: str) -> int | None:
        """The score position of a link whose key has no row (past the table's rows); None: score 0 (A11)."""
        return None

    def link_scores(self) -> np.ndarray:
        """Score(u) of every row's links (eq. 12) under the current cluster scores."""
        from frontier.source.scores import link_scores

        return link_scores(self.site_model.table, self.cluster_scores())

    def _scores(self) -> np.ndarray:
        if self._stale:
            scores = self.link_scores()
            factors = self.row_factors()
            self._row_scores = scores if factors is None else scores * factors
            self._stale = False
        return self._row_scores

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        self._redirect = (page.url, page.redirect) if page.redirect is not None else None
        self._lanes = {}
        if page.document is None:
            return ()
        from frontier.source.features import link_groups
        from frontier.source.navigation import index_of

        label = self.site_model.classify(page.document)
        self.harvested[index_of(label, self.n)] += 1
        self._stale = True
        scores = self._scores()
        table = self.site_model.table
        for apath, urls in link_groups(page.document, page.url, self.site_model.site).items():
            position = table.position((label, apath))
            if position is None:
                position = self.backoff(apath)
            lane = NO_ROW_LANE if position is None or position + FIRST_ROW_LANE > MAX_LANE else position + FIRST_ROW_LANE
            for url in urls:
                held = self._lanes.get(url)
                if held is None or self._lane_score(lane, scores) > self._lane_score(held, scores):
                    self._lanes[url] = lane
        return ()

    @staticmethod
    def _lane_score(lane: int, scores: np.ndarray) -> float:
        return float(scores[lane - FIRST_ROW_LANE]) if lane >= FIRST_ROW_LANE else 0.0

    def priority(self, url: str, parent: str | None, context: LinkContext | None) -> int:
        if parent is None or self._redirect == (parent, url):
            self.links["seed"] += 1
            return SEED_LANE
        lane = self._lanes.get(url)
        if lane is None:
            sorted_form = canonicalize(url, sort_query=True)
            lane = self._lanes.get(sorted_form, NO_ROW_LANE) if sorted_form is not None else NO_ROW_LANE
        self.links["row" if lane >= FIRST_ROW_LANE else "no_row"] += 1
        if self.novelty and lane >= FIRST_ROW_LANE:
            self._queued[url] = lane
        return lane

    def lane_rank(self, scheme_authority: str, lane: int) -> float:
        if lane == SEED_LANE:
            return -np.inf
        return -self._lane_score(lane, self._scores())

    def site_of(self, scheme_authority: str) -> str | None:
        from frontier.source.features import in_site

        return self.site_model.site if in_site(host_of(scheme_authority), self.site_model.site) else None

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        from frontier.source.navigation import label_of
        from frontier.source.report import cluster_name

        pages = {cluster_name(label_of(index, self.n)): int(count) for index, count in enumerate(self.harvested) if count}
        return {"cluster_pages": pages, "links_by_lane": self.links}

    def state(self) -> bytes:
        return orjson.dumps({"harvested": self.harvested.tolist(), "links": self.links}, option=orjson.OPT_SORT_KEYS)

    def restore(self, state: bytes) -> None:
        if not state:
            return
        saved = orjson.loads(state)
        if len(saved["harvested"]) == self.n + 1:  # else another model: Balance starts afresh
            self.harvested = np.array(saved["harvested"], dtype=np.float64)
        self.links = Counter(saved["links"])
        self._stale = True


class SourceUcc(_Source):
    """Crawling-for-UCC: Score(C) = Info·DSim·Balance (§3.2); a factor switched off counts as 1."""

    name = "source-ucc"

    @dataclass(frozen=True, slots=True)
    class Options:
        info: bool = True
        dsim: bool = True
        balance: bool = True
        alpha: float = 0.5  # Info = α·authority + (1 − α)·hub
        novelty: bool = True  # a lane's score × the share of its role's downloads, on its host, that brought new text
        host_prior: float = 2.0  # the downloads the role's share weighs against a host's own (a Beta prior)
        enough: float = 1.0  # a role keeps its whole score while this share of its downloads, or more, bring new text

        def __post_init__(self) -> None:
            if not 0 <= self.alpha <= 1:
                raise PolicyError("alpha", f"expected a number in [0, 1], got {self.alpha}")
            if not self.host_prior > 0:
                raise PolicyError("host_prior", f"expected a number above 0, got {self.host_prior}")
            if not 0 < self.enough <= 1:
                raise PolicyError("enough", f"expected a share in (0, 1], got {self.enough}")

    def __init__(self, options: SourceUcc.Options, model: Path | None) -> None:
        super().__init__(options, model)
        from frontier.source.kin import anchor_role
        from frontier.source.scores import Factors, hits
        from frontier.source.yields import RoleYield, SeenBlocks

        self.factors = Factors(options.info, options.dsim, options.balance)
        self.info = hits(self.site_model.table.adjacency(), drop_self_loops=True).info(options.alpha)
        self.novelty = options.novelty
        self._index_roles([anchor_role(row.apath) for row in self.site_model.table.rows])
        self.yields = RoleYield(len(self.roles), host_prior=options.host_prior, enough=options.enough)
        self._blocks = SeenBlocks()  # the text blocks of the pages fetched

    def cluster_scores(self) -> np.ndarray:
        from frontier.source.scores import ucc_cluster_scores

        return ucc_cluster_scores(self.info, self.site_model.dsim, self.harvested, self.factors)

    def row_factors(self) -> np.ndarray | None:
        return self.yields.role_factors()[self._role_index] if self.novelty else None

    def lane_rank(self, scheme_authority: str, lane: int) -> float:
        rank = super().lane_rank(scheme_authority, lane)
        if not self.novelty or lane < FIRST_ROW_LANE or rank == 0:
            return rank
        role = int(self._role_index[lane - FIRST_ROW_LANE])  # the role's factor is in the rank: the host's replaces it
        return rank * self.yields.factor(role, scheme_authority) / self.yields.role_factor(role)

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        role = self._role_fetched(page.url)
        if self.novelty:
            from frontier.source.yields import text_blocks

            # a redirect, an error or a page without text blocks brings nothing
            blocks = text_blocks(page.document) if page.status == 200 and page.document is not None else frozenset()
            new = self._blocks.add(blocks)
            if role is not None:
                self.yields.record(role, split(page.url)[0], new)
                self._stale = True
        return super().on_fetched(page, now)

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        found = {role: (int(n), int(new)) for role, n, new in zip(self.roles, self.yields.downloads, self.yields.new) if n}
        return {**super().counters(), "role_downloads": {role: n for role, (n, _) in found.items()},
                "role_new": {role: new for role, (_, new) in found.items()}}

    def state(self) -> bytes:
        saved = orjson.loads(super().state())
        return orjson.dumps({**saved, "yields": self.yields.to_data(self.roles)}, option=orjson.OPT_SORT_KEYS)

    def restore(self, state: bytes) -> None:
        super().restore(state)
        if state:
            self.yields.restore(orjson.loads(state).get("yields", {}), self.roles)


class SourceTarget(_Source):
    """Crawling-for-target: Score(C) = Info with authority fixed on the example's cluster (§3.3)."""

    name = "source-target"

    @dataclass(frozen=True, slots=True)
    class Options:
        target_examples: list[str] = field(default_factory=list)  # pages of the training sample of the wanted type
        alpha: float = 0.8
        kin: float = 0.8  # clusters linked into as the examples' are (cosine ≥ kin) are targets too; > 1: off
        novelty: bool = True  # a row's links score × the share of its role's downloads that brought new content
        roles: bool = True  # a row's target part × the share of its anchor role's links that led into a target
        backoff: bool = True  # a link whose key has no row takes its anchor role's rows pooled over clusters
        reach: bool = True  # a row's target part demoted when its role's training links missed the examples
        reach_evidence: float = 3.0  # the example links a role must have been expected to reach for that

        def __post_init__(self) -> None:
            if not self.target_examples:
                raise PolicyError("target_examples", "source-target needs an example page of the wanted type "
                                                     "(--target-example URL, a URL of the training sample)")
            if not 0 <= self.alpha <= 1:
                raise PolicyError("alpha", f"expected a number in [0, 1], got {self.alpha}")
            if not self.kin > 0:
                raise PolicyError("kin", f"expected a cosine above 0 (above 1: no cluster added), got {self.kin}")

    def __init__(self, options: SourceTarget.Options, model: Path | None) -> None:
        super().__init__(options, model)
        from frontier.source.kin import anchor_role, example_reach, kin_clusters, pooled_roles, role_shares
        from frontier.source.scores import target_cluster_scores, target_hits

        targets = []
        for url in options.target_examples:
            target = self.site_model.label_of(canonicalize(url) or url, outliers=False)
            if target is None:
                samples = [url for c in self.site_model.clusters if c.label >= 0 for url in c.samples[:1]]
                raise PolicyError("target_examples", f"{url} is not a page of the model's training sample; "
                                                     f"use one of its pages, e.g. {', '.join(samples[:5])}")
            targets.append(target)
        self.examples = sorted(set(targets))
        self.targets = kin_clusters(self.site_model.table, targets, options.kin)  # each example page weighs one
        info = target_hits(self.site_model.table.adjacency(), *self.targets).info(options.alpha)
        self._fixed = target_cluster_scores(info)
        table = self.site_model.table
        self._pooled = pooled_roles(table) if options.backoff else None
        self._role_position = {} if self._pooled is None else {
            role: len(table) + i for i, role in enumerate(self._pooled.roles)}
        width = len(table) + len(self._role_position)
        if options.roles:
            shares = role_shares(table, self.targets)
            self._agreement = np.concatenate([shares.by_row, [shares.by_role[role] for role in self._role_position]])
        else:
            self._agreement = np.ones(width)
        if options.reach:
            reach = example_reach(table, self.targets, _links_into(model, options.target_examples),
                                  evidence=options.reach_evidence)
            self._agreement = self._agreement * np.array(
                [reach[anchor_role(row.apath)] for row in table.rows] + [reach[role] for role in self._role_position])
        self.novelty = options.novelty
        self._contents: set[bytes] = set()  # digests of the bodies fetched
        # novelty is learnt per anchor role, for all the rows of a role at once (a layout per user
        # makes a role's rows many, each downloaded a few times); every score position has a role
        self._index_roles([anchor_role(row.apath) for row in table.rows] + list(self._role_position))
        self.role_downloads = np.zeros(len(self.roles))
        self.role_repeats = np.zeros(len(self.roles))
        self.content: Counter[str] = Counter()  # row downloads that brought new or repeated content

    def cluster_scores(self) -> np.ndarray:
        return self._fixed

    def link_scores(self) -> np.ndarray:
        from frontier.source.scores import target_link_scores

        distributions = self.site_model.table.distributions
        if self._pooled is not None:
            distributions = np.vstack([distributions, self._pooled.distributions])
        return target_link_scores(distributions, self._fixed, self.targets, self._agreement)

    def backoff(self, apath: str) -> int | None:
        from frontier.source.kin import anchor_role

        return self._role_position.get(anchor_role(apath))

    def row_factors(self) -> np.ndarray | None:
        if not self.novelty:
            return None
        from frontier.source.scores import novelty

        return novelty(self.role_downloads, self.role_repeats)[self._role_index]

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        role = self._role_fetched(page.url)
        if self.novelty and page.status == 200 and page.body:
            digest = hashlib.blake2b(page.body, digest_size=16).digest()
            repeated = digest in self._contents
            self._contents.add(digest)
            if role is not None:
                self.role_downloads[role] += 1
                self.role_repeats[role] += repeated
                self.content["repeated" if repeated else "new"] += 1
        return super().on_fetched(page, now)

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        return {**super().counters(), "row_downloads": self.content}

    def state(self) -> bytes:
        saved = orjson.loads(super().state())
        roles = {role: [downloads, repeats] for role, downloads, repeats
                 in zip(self.roles, self.role_downloads.tolist(), self.role_repeats.tolist()) if downloads}
        return orjson.dumps({**saved, "roles": roles}, option=orjson.OPT_SORT_KEYS)

    def restore(self, state: bytes) -> None:
        super().restore(state)
        roles = orjson.loads(state).get("roles", {}) if state else {}
        for i, role in enumerate(self.roles):  # a role the model does not have is another model's
            self.role_downloads[i], self.role_repeats[i] = roles.get(role, (0.0, 0.0))


def _links_into(model: Path | None, examples: Iterable[str]) -> Counter[str]:
    """Per anchor role, the training links whose destination is one of the ``examples``, read from the
    model folder's ``sample.jsonl`` (the training sample's link groups); PolicyError when it has none."""
    from frontier.source.kin import anchor_role
    from frontier.source.train import read_sample

    folder = model if model is None or model.is_dir() else model.parent
    wanted = {canonicalize(url) or url for url in examples}
    try:
        sample = read_sample(Path(folder or ".") / "sample.jsonl")
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PolicyError("reach", f"needs the model folder's sample.jsonl (or policy.reach = false): {e}") from None
    return Counter(anchor_role(apath) for page in sample for apath, urls in page.groups.items()
                   for url in urls if (canonicalize(url) or url) in wanted)


def load_model(model: Path | None, name: str) -> Model:
    """The SOUrCe model at ``model`` (a folder or its model.json); PolicyError naming ``model``."""
    if model is None:
        raise PolicyError("model", f"the {name} policy needs policy.model (--model): the folder "
                                   "that `crawl learn source` wrote")
    from frontier.source.model import Model

    try:
        return Model.load(model)
    except FileNotFoundError:
        raise PolicyError("model", f"{model} does not exist or is not a SOUrCe model folder") from None
    except (OSError, ValueError, KeyError, TypeError) as e:
        raise PolicyError("model", f"cannot read the SOUrCe model {model}: {e}") from None
