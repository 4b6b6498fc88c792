"""``--policy freshness``: live recrawls of users' newest-posts listings, timed by a freshness planner (issue 15).

The model folder (``policy.model``) holds ``users.csv`` (``user_id,url``: each user's listing, an
API call returning their newest posts) and, optionally, ``history.csv`` (``user_id,unix_ts``: the
posts seen before the crawl). The crawl's seeds are the listings' URLs. Each answer to a listing
is JSON ``{"user", "now", "posts": [{"id", "time"}]}`` (the posting lab's shape, times in unix
seconds of the site's clock): the posts newer than the user's newest one seen so far go to the
planner (:mod:`frontier.freshness.planners`, the paper's by default) as that crawl's report, a 304
(``page.changed`` False) reports none, and the planner's next due users come back as revisits of
their listings. The credential's token bucket (``[[credentials]]``) keeps the calls within the
API's limit, and a 429 waits its Retry-After (the engine does both; a 429 never reaches here).

Choices where the issue is silent:

* The planner's clock is the site's: its ``now`` in each answer fixes the offset to the crawl's
  clock, and ``time_scale`` (site seconds per crawl second: 1 for a real site, the lab's
  acceleration for the lab) converts between them.
* The planner begins at the first answer, over ``days`` from then. It hands out each user once
  until that user's listing is fetched again (the contract's "in flight"), so a user has at most
  one pending revisit; one whose seed has not been fetched yet gets none until it is.
* Revisit times are the planner's due times; when more are due than the credential allows, the
  engine serves them in due order, not by the planner's expected backlog (``take``'s order).
* A listing that fails for good is reported as a crawl that returned nothing, so the planner
  plans the user again instead of holding it in flight forever.

Pure: no I/O but reading the model folder in ``__init__``; time comes in as ``now``.
"""

from __future__ import annotations

import pickle
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from frontier.freshness.allocation import AllocationPlanner
from frontier.freshness.calendar import DAY
from frontier.freshness.files import InputError, read_history, read_listings
from frontier.freshness.params import PlannerParams, with_settings
from frontier.freshness.planners import PLANNERS, FreshnessPlanner
from frontier.page import FetchedPage
from frontier.policy import CrawlPolicy, PolicyError, Revisit
from frontier.urls import canonicalize

TAKE_ALL = 1 << 30  # the credential, not the planner, limits the calls


@dataclass(frozen=True, slots=True)
class Options:
    planner: str = "paper"
    """``paper`` (Poisson for classes 1–2, Hash for 3–4), ``poisson``, ``hash`` or ``allocation`` (a
    budget of ``calls_per_day``, given in ``settings``, split between freshness and full calls)."""
    per_crawl: int = 100
    """The most posts one call returns (the listing's ``count``)."""
    time_scale: float = 1.0
    """Site seconds per crawl second (the posting lab's ``--lab-scale``)."""
    days: float = 3650.0
    """The planner's horizon, in site days from the first answer."""
    settings: list[str] = field(default_factory=list)
    """Planner parameters as ``KEY=VALUE`` (``hash.weight=0.7``; ``frontier/freshness/params.py``)."""


class FreshnessPolicy(CrawlPolicy):
    """Recrawl each user's listing when the planner expects it to hold the most new posts."""

    name = "freshness"
    Options = Options
    needs_model = True

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        assert isinstance(options, Options) and model is not None
        self.o = options
        if options.planner not in PLANNERS:
            raise PolicyError("planner", f"must be one of {', '.join(PLANNERS)}, not {options.planner!r}")
        if not options.time_scale > 0 or not options.days > 0 or options.per_crawl < 1:
            raise PolicyError("time_scale", "time_scale and days must be above 0, per_crawl 1 or more")
        try:
            params = with_settings(PlannerParams(per_crawl=options.per_crawl), options.settings)
            self.listings = read_listings(model / "users.csv")
            history_file = model / "history.csv"
            self.history = read_history(history_file, float("-inf"), float("inf")) if history_file.exists() else {}
            self.planner: FreshnessPlanner | AllocationPlanner = PLANNERS[options.planner](params)
        except (ValueError, InputError) as e:
            raise PolicyError("model" if isinstance(e, InputError) else "settings", str(e)) from None
        self.user_of = {form: user for user, url in self.listings.items()
                        for form in {canonicalize(url, sort_query=True), canonicalize(url, sort_query=False)} if form}
        self.offset: float | None = None  # site time − time_scale × crawl time
        self.newest: dict[str, float] = {}  # each user's newest post seen
        self.url: dict[str, str] = {}  # each user's listing as fetched
        self.pending: set[str] = set()  # users with a revisit asked for and not yet fetched
        self.calls: Counter[str] = Counter()

    def _site_time(self, now: float) -> float:
        assert self.offset is not None
        return self.offset + self.o.time_scale * now

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        user = self.user_of.get(page.url)
        if user is None:
            return ()
        posts: list[float] = []
        overflow = False
        if page.status == 200:
            try:
                answer = orjson.loads(page.body)
                site_now = float(answer["now"])
                times = sorted(float(p["time"]) for p in answer["posts"])
            except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
                self.calls["unreadable"] += 1
                return self._report(user, page.url, now, [], False)
            self.offset = site_now - self.o.time_scale * now
            newest = self.newest.get(user, float("-inf"))
            posts = [t for t in times if t > newest]
            overflow = len(posts) >= self.o.per_crawl
            self.calls["changed" if posts else "unchanged"] += 1
        elif page.changed is False:
            self.calls["not_modified"] += 1
        else:
            self.calls[f"status_{page.status}"] += 1
        if self.offset is None:
            return ()  # no clock yet: the first readable answer starts the planner
        return self._report(user, page.url, now, posts, overflow)

    def on_failed(self, url: str, error: str, now: float, final: bool) -> Iterable[Revisit]:
        user = self.user_of.get(url)
        if user is None or not final or self.offset is None:
            return ()
        self.calls["failed"] += 1
        return self._report(user, url, now, [], False)

    def _report(self, user: str, url: str, now: float, posts: list[float], overflow: bool) -> list[Revisit]:
        site_now = self._site_time(now)
        if not self.planner.names:
            self.planner.begin(list(self.listings), self.history, site_now, site_now + self.o.days * DAY)
        self.url[user] = url
        self.pending.discard(user)
        if posts:
            self.newest[user] = posts[-1]
        self.planner.crawled(user, site_now, posts, overflow)
        revisits = []
        scale = self.o.time_scale
        while (due := self.planner.next_at()) is not None:
            for taken in self.planner.take(due, TAKE_ALL):
                if taken in self.url and taken not in self.pending:
                    self.pending.add(taken)
                    revisits.append(Revisit(self.url[taken], now + max(0.0, due - site_now) / scale))
        return revisits

    def state(self) -> bytes:
        return pickle.dumps((self.planner, self.offset, self.newest, self.url, self.pending, self.calls))

    def restore(self, state: bytes) -> None:
        if state:
            self.planner, self.offset, self.newest, self.url, self.pending, self.calls = pickle.loads(state)

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        planner = self.planner
        classes = planner.statistics().classes if isinstance(planner, FreshnessPlanner) and planner.names else {}
        return {"calls": dict(self.calls), "users_by_class": {str(c): n for c, n in classes.items()}}
