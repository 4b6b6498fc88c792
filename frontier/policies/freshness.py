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
* Revisits are asked for only up to the planner's next midnight or period start, so that its
  clock never runs ahead of the site's: the engine's timer (``tick``) asks again once the event
  has passed, and the crawl does not end meanwhile (``busy``).

With several agents (``--processes``, and ``[[credentials]]`` with ``spread = true``: one
credential of the API per agent), the users are shared out as the distributed architecture
does (:mod:`frontier.freshness.sharing`): the position split from the model folder, each agent
fetching (``owner``) and planning only its own users with its own credential, and quota-based
moves every ``rebalance_hours`` exchanged as messages (``messages``, ``on_message``). Every
agent's planner begins with every user (a moved user's model is then there to update); it
hands out only its own. With ``architecture =
"centralized"`` (:mod:`frontier.freshness.central`) agent 0 alone plans: each crawl that falls
due goes to the agent with the shortest to-do list, and every agent sends its answers to agent 0.

Pure: no I/O but reading the model folder in ``__init__``; time comes in as ``now``.
"""

from __future__ import annotations

import math
import pickle
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import orjson

from frontier.freshness.calendar import DAY
from frontier.freshness.central import Central, Dispatch, Report
from frontier.freshness.central import decode as decode_central
from frontier.freshness.files import InputError, read_history, read_listings
from frontier.freshness.params import PlannerParams, with_settings
from frontier.freshness.planners import (
    hash_planner,
    paper_planner,
    poisson_planner,
)
from frontier.freshness.sharing import Handover, Sharing, position_split
from frontier.page import FetchedPage
from frontier.policy import CrawlPolicy, PolicyError, Revisit
from frontier.urls import canonicalize

LIVE_PLANNERS = {"paper": paper_planner, "poisson": poisson_planner, "hash": hash_planner}
TAKE_ALL = 1 << 30  # the credential, not the planner, limits the calls


@dataclass(frozen=True, slots=True)
class Options:
    planner: str = "paper"
    """``paper`` (Poisson for classes 1–2, Hash for 3–4), ``poisson`` or ``hash``. (The ``allocation``
    planner is offline only: ``crawl fresh schedule`` and the evaluation.)"""
    per_crawl: int = 100
    """The most posts one call returns (the listing's ``count``)."""
    time_scale: float = 1.0
    """Site seconds per crawl second (the posting lab's ``--lab-scale``)."""
    days: float = 3650.0
    """The planner's horizon, in site days from the first answer."""
    settings: list[str] = field(default_factory=list)
    """Planner parameters as ``KEY=VALUE`` (``hash.weight=0.7``; ``frontier/freshness/params.py``)."""
    quota_per_hour: float = 0.0
    """With several agents: each agent's API calls per site hour, for the moves of users between
    agents (0: the moves even out the agents' predicted calls)."""
    rebalance_hours: float = 24.0
    """With several agents: site hours between two rounds of moves."""
    architecture: str = "distributed"
    """With several agents: ``distributed`` (each plans its own users) or ``centralized`` (agent 0
    plans every user and sends each due crawl to the agent with the shortest to-do list)."""


class FreshnessPolicy(CrawlPolicy):
    """Recrawl each user's listing when the planner expects it to hold the most new posts."""

    name = "freshness"
    Options = Options
    needs_model = True

    def __init__(self, options: object, model: Path | None) -> None:
        super().__init__(options, model)
        assert isinstance(options, Options) and model is not None
        self.o = options
        if options.planner not in LIVE_PLANNERS:
            raise PolicyError("planner", f"must be one of {', '.join(LIVE_PLANNERS)}, not {options.planner!r}")
        if not options.time_scale > 0 or not options.days > 0 or options.per_crawl < 1:
            raise PolicyError("time_scale", "time_scale and days must be above 0, per_crawl 1 or more")
        if options.architecture not in ("distributed", "centralized"):
            raise PolicyError("architecture", f"must be distributed or centralized, not {options.architecture!r}")
        if not options.rebalance_hours > 0 or options.quota_per_hour < 0:
            raise PolicyError("rebalance_hours", "rebalance_hours must be above 0, quota_per_hour 0 or more")
        try:
            params = with_settings(PlannerParams(per_crawl=options.per_crawl), options.settings)
            self.listings = read_listings(model / "users.csv")
            history_file = model / "history.csv"
            self.history = read_history(history_file, float("-inf"), float("inf")) if history_file.exists() else {}
            self.planner = LIVE_PLANNERS[options.planner](params)
        except (ValueError, InputError) as e:
            raise PolicyError("model" if isinstance(e, InputError) else "settings", str(e)) from None
        self.user_of = {form: user for user, url in self.listings.items()
                        for form in {canonicalize(url, sort_query=True), canonicalize(url, sort_query=False)} if form}
        self.offset: float | None = None  # site time − time_scale × crawl time
        self.newest: dict[str, float] = {}  # each user's newest post seen
        self.url: dict[str, str] = {}  # each user's listing as fetched
        self.pending: set[str] = set()  # users with a revisit asked for and not yet fetched
        self.calls: Counter[str] = Counter()
        self.sharing: Sharing | None = None  # with several agents: who owns each user
        self.period_start = 0.0  # with several agents: the planner's period whose plans are this agent's
        self.recent: dict[str, list[float]] = {}  # with several agents: the posts a move carries
        self.central: Central | None = None  # with several agents, centralized: the dispatch

    def join(self, agent: int, agents: int) -> None:
        if agents > 1:
            params = self.planner.params
            owners = position_split(list(self.listings), self.history, agents, params.routing, params.threshold)
            quota = 24 * self.o.quota_per_hour if self.o.quota_per_hour else None
            if self.o.architecture == "centralized":
                self.central = Central(agent, agents, owners)
            else:
                self.sharing = Sharing(agent, agents, owners, quota)

    def owner(self, url: str) -> int | None:
        user = self.user_of.get(url)
        if user is None:
            return None
        if self.central is not None:
            return self.central.first[user]
        return None if self.sharing is None else self.sharing.owner[user]

    def _plans(self, user: str) -> bool:
        if self.central is not None:
            return self.central.serves
        return self.sharing is None or self.sharing.owns(user)

    def _site_time(self, now: float) -> float:
        assert self.offset is not None
        return self.offset + self.o.time_scale * now

    def on_fetched(self, page: FetchedPage, now: float) -> Iterable[Revisit]:
        user = self.user_of.get(page.url)
        if user is None or not (self._plans(user) or self.central is not None):
            return ()
        kind, times = self._answer(page, now)
        if self.central is not None:
            return self._to_server(user, page.url, now, kind, times)
        return self._judge(user, page.url, now, kind, times)

    def on_failed(self, url: str, error: str, now: float, final: bool) -> Iterable[Revisit]:
        user = self.user_of.get(url)
        if user is None or not final or not (self._plans(user) or self.central is not None):
            return ()
        if self.central is not None:
            return self._to_server(user, url, now, "failed", [])
        return self._judge(user, url, now, "failed", [])

    def _answer(self, page: FetchedPage, now: float) -> tuple[str, list[float]]:
        """What a listing's answer says: ``ok`` and the post times it lists (a readable answer sets
        the clock), or ``not_modified``, ``unreadable``, ``status_N`` and none."""
        if page.status != 200:
            return ("not_modified" if page.changed is False else f"status_{page.status}"), []
        try:
            answer = orjson.loads(page.body)
            site_now = float(answer["now"])
            times = sorted(float(p["time"]) for p in answer["posts"])
        except (orjson.JSONDecodeError, KeyError, TypeError, ValueError):
            return "unreadable", []
        self.offset = site_now - self.o.time_scale * now
        return "ok", times

    def _judge(self, user: str, url: str, now: float, kind: str, times: list[float]) -> list[Revisit]:
        """Count an answer, and report its new posts to the planner."""
        posts: list[float] = []
        if kind == "ok":
            newest = self.newest.get(user, float("-inf"))
            posts = [t for t in times if t > newest]
            kind = "changed" if posts else "unchanged"
        self.calls[kind] += 1
        if self.offset is None:
            return []  # no clock yet: the first readable answer starts the planner
        return self._report(user, url, now, posts, len(posts) >= self.o.per_crawl)

    def _report(self, user: str, url: str, now: float, posts: list[float], overflow: bool) -> list[Revisit]:
        site_now = self._site_time(now)
        self._begin(site_now)
        self.url[user] = url
        self.pending.discard(user)
        if posts:
            self.newest[user] = posts[-1]
        self.planner.crawled(user, site_now, posts, overflow)
        if self.sharing is not None:
            kept = site_now - (self.planner.params.routing.window_days + 1) * DAY  # what routing reads
            self.recent[user] = [t for t in self.recent.get(user, []) if t >= kept] + [t for t in posts if t >= kept]
            state = Handover(url, self.newest.get(user), self.recent[user], site_now, overflow, self._offset())
            if self.sharing.hand_over(user, state):
                del self.recent[user]
                self.planner.queue.cancel(self.planner.index[user])
        return self._revisits(now, site_now)

    def _begin(self, site_now: float) -> None:
        if not self.planner.names:
            self.planner.begin(list(self.listings), self.history, site_now, site_now + self.o.days * DAY)
            self._drop_others()

    def _drop_others(self) -> None:
        """Unplan the users of other agents: taking one would move the planner's clock to its due time."""
        if self.sharing is not None:
            planner = self.planner
            self.period_start = planner.next_period
            for user in planner.names:
                if not self.sharing.owns(user):
                    planner.queue.cancel(planner.index[user])

    def _offset(self) -> float:
        assert self.offset is not None
        return self.offset

    def _revisits(self, now: float, site_now: float) -> list[Revisit]:
        """The revisits of this agent's users the planner has due, each user at most once in flight."""
        revisits = []
        scale = self.o.time_scale
        while (due := self._next_due(site_now)) is not None:
            if self.sharing is not None and self.planner.next_period != self.period_start:
                self._drop_others()  # a new period planned every Poisson user
                continue
            for taken in self.planner.take(due, TAKE_ALL):
                if taken in self.url and taken not in self.pending and self._plans(taken):
                    self.pending.add(taken)
                    if self.central is not None and self.central.dispatch(taken, self.url[taken]) != self.central.me:
                        continue  # sent to the agent with the shortest to-do list
                    revisits.append(Revisit(self.url[taken], now + max(0.0, due - site_now) / scale))
        return revisits

    def _next_due(self, site_now: float) -> float | None:
        """The planner's next due time, or None when it lies past the planner's next midnight or
        period start still to come: asking for it would run that event now, early, and plan from a
        clock ahead of the site's (``tick`` asks again once the event has passed)."""
        planner = self.planner
        event = min(planner.next_period, planner.next_midnight)
        earliest = planner.queue.earliest()
        if event > site_now and (earliest is None or earliest >= event):
            return None
        if self.central is not None and (earliest is None or earliest > site_now):
            return None  # a crawl is dispatched when it falls due, to the shortest to-do list then
        return planner.next_at()

    # -- several agents --------------------------------------------------------------------

    def _planning(self) -> bool:
        """This agent plans (the server, when centralized), and its planner has begun."""
        return (self.central is None or self.central.serves) and self.offset is not None and bool(self.planner.names)

    def tick(self, now: float) -> Iterable[Revisit]:
        return self._revisits(now, self._site_time(now)) if self._planning() else ()

    def busy(self) -> bool:
        return self._planning() and self.planner.next_at() is not None

    def _to_server(self, user: str, url: str, now: float, kind: str, times: list[float]) -> list[Revisit]:
        """Centralized: an answer goes to the server, which judges it (here, on agent 0)."""
        assert self.central is not None
        if self.offset is None:
            return []  # no clock yet: nothing to tell the time of
        report = Report(user, url, self._site_time(now), times, kind, self.offset)
        if self.central.serves:
            return self._serve(self.central.me, report, now)
        self.central.report(report)
        return []

    def _serve(self, sender: int, report: Report, now: float) -> list[Revisit]:
        assert self.central is not None
        self.central.reported(report.user, sender)
        if self.offset is None:
            self.offset = report.offset
        return self._judge(report.user, report.url, now, report.kind, report.times)

    def messages(self, now: float) -> Sequence[tuple[int, bytes]]:
        if self.central is not None:
            return self.central.take_messages()
        sharing = self.sharing
        if sharing is None:
            return ()
        if self.offset is not None:
            number = math.floor(self._site_time(now) / (self.o.rebalance_hours * 3600.0))
            if number > sharing.round:
                sharing.start_round(number, self._calls_a_day(now))
        return sharing.take_messages()

    def on_message(self, sender: int, message: bytes, now: float) -> Iterable[Revisit]:
        if self.central is not None:
            return self._central_message(sender, message, now)
        sharing = self.sharing
        if sharing is None:
            return ()
        try:
            move = sharing.receive(sender, message)
        except ValueError:
            self.calls["unreadable_message"] += 1
            return ()
        if sharing.asked > sharing.round:  # another agent's round came first: take part in it
            sharing.start_round(sharing.asked, self._calls_a_day(now))
        if move is None or move.handover is None:
            return ()
        user, state = move.user, move.handover
        if self.offset is None:
            self.offset = state.offset
        site_now = self._site_time(now)
        self._begin(site_now)
        self.url[user] = state.url
        newest = self.newest.get(user, float("-inf"))
        if state.newest is not None:
            self.newest[user] = max(newest, state.newest)
        self.recent[user] = state.posts
        self.planner.crawled(user, state.crawled_at, [t for t in state.posts if t > newest], state.overflow)
        return self._revisits(now, site_now)

    def _central_message(self, sender: int, data: bytes, now: float) -> list[Revisit]:
        assert self.central is not None
        try:
            message = decode_central(data)
        except ValueError:
            self.calls["unreadable_message"] += 1
            return []
        if isinstance(message, Dispatch):
            return [Revisit(message.url, now)]
        return self._serve(sender, message, now) if self.central.serves else []

    def _calls_a_day(self, now: float) -> dict[str, float]:
        """The calls each user this agent plans (and keeps) is predicted to need over the next site day."""
        assert self.sharing is not None
        planner = self.planner
        if not planner.names or self.offset is None:
            return {}
        site_now = self._site_time(now)
        calls = {}
        for user in self.sharing.mine():
            if user in self.sharing.leaving:
                continue
            if planner.user_class(user).uses_hash:
                calls[user] = planner.expected_posts(user, site_now, site_now + DAY) / planner.threshold
            else:
                calls[user] = DAY / planner.period
        return calls

    def state(self) -> bytes:
        return pickle.dumps((self.planner, self.offset, self.newest, self.url, self.pending, self.calls,
                             self.sharing, self.recent, self.period_start, self.central))

    def restore(self, state: bytes) -> None:
        if state:
            (self.planner, self.offset, self.newest, self.url, self.pending, self.calls,
             *sharing) = pickle.loads(state)
            if sharing:  # a checkpoint from before the several-agent split has none
                self.sharing, self.recent, self.period_start, self.central = sharing

    def counters(self) -> Mapping[str, Mapping[str, int]]:
        classes = self.planner.statistics().classes if self.planner.names else {}
        counters = {"calls": dict(self.calls), "users_by_class": {str(c): n for c, n in classes.items()}}
        if self.sharing is not None:
            mine = self.sharing.mine()
            counters["users"] = {"owned": len(mine), "moved_in": self.sharing.moved_in,
                                 "moved_out": self.sharing.moved_out}
            if self.planner.names:  # the agents' counters are added up: each counts its own users
                counters["users_by_class"] = dict(Counter(str(int(self.planner.user_class(u))) for u in mine))
        if self.central is not None and self.central.serves:
            counters["dispatched"] = {str(agent): n for agent, n in sorted(self.central.dispatched.items())}
        return counters
