"""The frontier facade: the one object the engine talks to.

It owns the URL cache, the sieve, the workbench, the virtualizer, the distributor, the
pending revisits, the scope (with its trap limits), the URL-shape budget and the crawl
policy, and exposes the operations of ARCHITECTURE.md's steps; the engine uses these public
methods and nothing else (it reads visit states, it never writes them):

* links in: ``discover`` (scope, policy, cache, trap limits, sieve), ``drop`` (count what the
  engine's own filters dropped);
* sieve → workbench: ``distribute`` (returns hosts to resolve), ``wants_flush``/``flush``/
  ``flush_sieve`` (a forced sieve flush), ``distributor_deadline`` (when to look again);
* DNS: ``resolved``, ``resolve_failed``/``retry_resolve``, ``refused``, ``readdress``, ``purged_meanwhile``;
* the fetch token: ``acquire``, ``hand_out``, ``next_deadline``, ``rank`` and ``site_of``
  (ranked mode: which host goes next), ``next_url``, ``release``, ``set_delays`` (live politeness);
* robots.txt: ``robots_url``, ``robots_redirected``, ``robots_failed``, ``robots_fetched``;
* outcomes: ``succeeded``, ``failed`` (retries with a doubling back-off, then the policy's
  ``on_failed``), ``fetched`` (the policy's ``on_fetched``; the revisits both return are
  scheduled), ``add_revisits`` (those a policy's message or timer asks for), ``fetcher_waited``;
* the host quality filter (``frontier/quality.py``, off unless given): ``quality_wants``,
  ``quality_page`` (a host scored at or above the threshold is stopped: purged, and its later
  links dropped as "quality"; or deprioritized: fetched at most every ``quality_delay``);
* ``checkpoint``/``restore``, ``idle``, ``statistics``, ``close``.

The policy (:mod:`frontier.policy`) costs nothing it does not ask for: ``wants_pages``,
``wants_context`` and ``wants_document`` tell the engine what to build for it, and the
breadth-first path (``discover``, ``next_url``, the distributor's placement) does no
per-URL work for ranking.

Every method is synchronous and takes ``now`` where time matters; the engine performs the
I/O these calls ask for. Nothing here reads a clock.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import xxhash

from frontier import snapshot
from frontier.distributor import Distributor
from frontier.page import FetchedPage, LinkContext
from frontier.policies.breadth_first import BreadthFirst
from frontier.policy import MAX_LANE, CheckpointMismatch, CrawlPolicy, Revisit, policy_name
from frontier.quality import DEPRIORITIZED_DELAY, PageText, QualityFilter, Verdict
from frontier.revisits import BUCKET_SECONDS, RevisitSchedule
from frontier.scope import Scope
from frontier.settings import FrontierSettings, FrontierStatistics
from frontier.shapes import ShapeBudget
from frontier.sieve import MercatorSieve
from frontier.url_cache import UrlCache
from frontier.urls import split
from frontier.validators import attach, detach
from frontier.virtualizer import WorkbenchVirtualizer
from frontier.visit_state import Phase, Rules, VisitState
from frontier.workbench import Workbench

_fingerprint = xxhash.xxh3_64_intdigest


class Frontier:
    """Decides what to fetch next. See the package docstring for the life of a URL."""

    def __init__(
        self,
        directory: Path,
        settings: FrontierSettings,
        *,
        policy: CrawlPolicy | None = None,
        scope: Scope | None = None,
        schedule: Callable[[str], bool] | None = None,
        quality: QualityFilter | None = None,
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._used_before = any(directory.iterdir())  # then a previous process may have fetched just now
        self.directory = directory
        self.settings = settings
        self.policy = policy = policy or BreadthFirst(BreadthFirst.Options(), None)
        self.scope = scope or Scope("any")
        self.schedule = schedule  # the schedule filter (frontier/filters); None accepts all
        self.quality = quality
        hooks = type(policy)
        self._policy_filters = hooks.accept_link is not CrawlPolicy.accept_link
        # dg: the policy judges only links the URL cache does not hold (read once, like the hooks)
        self._judge_after_lookup = self._policy_filters and policy.judges_new_links_only
        # what the engine builds for the policy: nothing, for one that overrides no hook
        self.wants_pages = hooks.on_fetched is not CrawlPolicy.on_fetched or hooks.on_failed is not CrawlPolicy.on_failed
        self.wants_context = policy.wants_context
        self.wants_document = policy.wants_document
        self.ranked = policy.ranks_urls
        self.cache = UrlCache(settings.url_cache_bytes)
        # A checkpoint, if there is one, says where the sieve and the virtualizer resume from.
        self._saved: tuple[dict[str, Any], bytes, bytes] | None = None
        sieve_from = index_from = None
        if self.checkpoint_path.exists():
            meta, index_from, hosts, policy_state = snapshot.read(self.checkpoint_path)
            taken_with = meta.get("policy", BreadthFirst.name)  # version 1 knew only breadth-first
            if taken_with != policy_name(policy):
                raise CheckpointMismatch(
                    f"{self.checkpoint_path} was taken with the crawl policy {taken_with!r}, not "
                    f"{policy_name(policy)!r}: resume with policy.name = {taken_with!r}"
                )
            sieve_from, self._saved = meta["sieve"], (meta, hosts, policy_state)
        self.sieve = MercatorSieve(
            directory / "sieve", bucket_bytes=settings.sieve_bucket_bytes, fsync=settings.fsync, resume_from=sieve_from
        )
        self.virtualizer = WorkbenchVirtualizer(
            directory / "virtualizer",
            segment_bytes=settings.virtualizer_segment_bytes,
            fsync=settings.fsync,
            resume_from=index_from,
        )
        self.workbench = Workbench(settings.ip_delay, self.rank if self.ranked else None)
        self.drops: Counter[str] = Counter()
        self.shapes = ShapeBudget(settings.max_urls_per_shape, self.drops) if settings.max_urls_per_shape else None
        self.distributor = Distributor(
            self.workbench,
            self.sieve,
            self.virtualizer,
            workbench_bytes=settings.workbench_bytes,
            host_delay=settings.host_delay,
            max_urls_per_host=settings.max_urls_per_host,
            required_front=settings.required_front,
            front_step=settings.front_step,
            lane_rank=policy.lane_rank if self.ranked else None,
            shapes=self.shapes,
        )
        self.revisits = RevisitSchedule(self.virtualizer, memory_limit=settings.revisits_in_memory)
        self.resolving = self.retrying = self.discovered = self.cache_hits = self.dup_lookups = 0
        self._next_flush = 0.0

    # -- checkpoints -------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path:
        return self.directory / "checkpoint"

    @property
    def has_checkpoint(self) -> bool:
        """A checkpoint exists: :meth:`restore` will resume from it."""
        return self._saved is not None

    def checkpoint(self, now: float, extra: dict[str, Any]) -> None:
        """Make the whole frontier durable at once, with the engine's ``extra`` state and the policy's.

        The sieve and the virtualizer sync their data first; the snapshot file, replaced
        atomically, is the commit; only then do they delete what the previous one needed.
        """
        sieve_state = self.sieve.prepare_checkpoint()
        index = self.virtualizer.prepare_checkpoint()
        d = self.distributor
        meta = {
            "version": 2,
            "sieve": sieve_state,
            "required_front": d.required_front,
            "counters": {"discovered": self.discovered, "cache_hits": self.cache_hits, "dup_lookups": self.dup_lookups,
                         "drops": dict(self.drops)},
            "revisits": self.revisits.state(now),
            "policy": policy_name(self.policy),
            "extra": extra,
            "shapes": self.shapes.state() if self.shapes is not None else None,
            "quality": self.quality.state() if self.quality is not None else None,
        }
        hosts = snapshot.encode_hosts(d.host_to_visit_state.values())
        snapshot.write(self.checkpoint_path, meta, index, hosts, self.policy.state(), fsync=self.settings.fsync)
        self.sieve.commit_checkpoint(sieve_state)
        self.virtualizer.commit_checkpoint(index)

    def restore(
        self, now: float, rules: Callable[[bytes, float], Rules | None] | None = None
    ) -> tuple[list[VisitState], dict[str, Any]]:
        """Resume from the checkpoint: returns the visit states to resolve and the engine's extra.

        The previous process may have fetched any host or IP just before it died, even with
        no checkpoint yet, so no host is fetched before ``now`` + its delay, and no IP before
        ``now`` + the IP delay, unless the directory was empty when opened.

        ``rules(saved, fetched)`` turns a host's saved robots.txt rules and their wall-clock
        fetch time back into the engine's rules, or None if they are to be fetched again
        (expired); without it every robots.txt is fetched again. The policy gets its state
        back (``CrawlPolicy.restore``).
        """
        if self._used_before:
            self.workbench.not_before = now + self.settings.ip_delay
            self.distributor.not_before = now + self.settings.host_delay
        if self._saved is None:
            return [], {}
        meta, hosts, policy_state = self._saved
        self._saved = None
        d = self.distributor
        d.required_front = max(d.required_front, meta["required_front"])
        counters = meta["counters"]
        self.discovered, self.cache_hits = counters["discovered"], counters["cache_hits"]
        self.dup_lookups = counters.get("dup_lookups", 0)  # older checkpoints did not count them
        self.drops.update(counters["drops"])
        if self.shapes is not None and meta.get("shapes"):  # a checkpoint taken with the budget off has none
            self.shapes.load(meta["shapes"])
        revisits = meta["revisits"]
        if meta["version"] == 1:  # revisits were all in memory
            revisits = {"base": 0.0, "bucket_seconds": BUCKET_SECONDS, "memory": revisits, "buckets": []}
        self.revisits.restore(revisits, now)
        if self.quality is not None and meta.get("quality"):  # none if taken with the filter off, or before it kept one
            self.quality.restore(meta["quality"])
        self.policy.restore(policy_state)
        to_resolve = []
        for saved in snapshot.decode_hosts(hosts):
            vs = VisitState(saved.id, saved.scheme_authority, saved.host_delay, ranked=self.ranked)
            vs.scheduled, vs.fetched, vs.on_disk = saved.scheduled, saved.fetched, saved.on_disk
            vs.next_fetch = now + saved.host_delay
            if saved.robots is not None and rules is not None:
                vs.robots, vs.robots_fetched = rules(saved.robots, saved.robots_fetched), saved.robots_fetched
            if saved.purged:
                d.restore(vs, [], [])
                vs.transition("purge")
                continue
            d.restore(vs, saved.items, saved.lanes or [])
            if vs.has_work or vs.on_disk:
                vs.transition("resolve")
                to_resolve.append(vs)
            # else it stays NEW until a URL for it arrives (Distributor._host resolves it then)
        self.resolving += len(to_resolve)
        return to_resolve, meta["extra"]

    # -- step 1: discovery -------------------------------------------------------------

    def discover(
        self, links: Iterable[str], parent: str | None = None, contexts: Iterable[LinkContext] | None = None
    ) -> int:
        """Offer canonical URLs to scope, policy, URL cache, trap limits and sieve; returns how many reached the sieve.

        The policy judges a link before the URL cache looks it up (gd), or, when it ``judges_new_links_only``,
        after a lookup that does not insert, and only on a miss (dg): the cache then holds a link only once it
        is accepted, so a link refused under one parent is not lost when another parent offers it (digest
        §2.12, §5 #21). With no policy, schedule or quality filter, the cache is looked up first: a link it
        remembers passed every check on entering it, and is a hit in ~0.3 µs instead of ~0.75 µs.
        """
        allows, rejects = self.scope.allows, self.scope.rejects
        schedule = self.schedule
        policy = self.policy
        judge_first = self._policy_filters and not self._judge_after_lookup
        judge_after_lookup = self._judge_after_lookup
        hosts = self.distributor.host_to_visit_state
        host_cap = self.settings.max_urls_per_host
        cache_add = self.cache.add
        enqueue = self.sieve.enqueue
        drops = self.drops
        stopped = self.quality.stopped if self.quality is not None else None
        context_iter = iter(contexts) if contexts is not None else None
        remembered = self.cache.hit if not self._policy_filters and schedule is None and stopped is None else None
        accepted = lookups = hits = 0
        for url in links:
            context = next(context_iter) if context_iter is not None else None
            fp = _fingerprint(data := url.encode())
            if remembered is not None and remembered(fp):  # even a host full since (max_urls_per_host)
                lookups, hits = lookups + 1, hits + 1
                continue
            scheme_authority = split(url)[0]
            if not allows(scheme_authority):
                drops["scope"] += 1
                continue
            if stopped and scheme_authority in stopped:
                drops["quality"] += 1
                continue
            if schedule is not None and not schedule(url):
                drops["schedule_filter"] += 1
                continue
            if judge_first:
                reason = policy.accept_link(url, parent, context)
                if reason is not None:
                    drops[reason] += 1
                    continue
            vs = hosts.get(scheme_authority)
            if vs is not None and vs.scheduled >= host_cap:
                drops["host_limit"] += 1
                continue
            lookups += 1
            if judge_after_lookup:
                if fp in self.cache:
                    hits += 1
                    continue
                reason = policy.accept_link(url, parent, context)
                if reason is not None:
                    drops[reason] += 1
                    continue
                cache_add(fp)
            elif not cache_add(fp):
                hits += 1
                continue
            # the trap limits depend on the URL alone: judged once, its later links are cache hits
            reason = rejects(url)
            if reason is not None:
                drops[reason] += 1
                continue
            if self.ranked:  # the lane travels with the URL, 2 bytes ahead of it
                data = max(0, min(MAX_LANE, policy.priority(url, parent, context))).to_bytes(2, "big") + data
            enqueue(data, fp)
            accepted += 1
        self.discovered += accepted
        self.dup_lookups += lookups
        self.cache_hits += hits
        return accepted

    def drop(self, reason: str, n: int = 1) -> None:
        """Count ``n`` URLs the engine dropped itself (its follow and fetch filters) under ``reason``."""
        self.drops[reason] += n

    # -- step 2: distribution ----------------------------------------------------------

    def wants_flush(self, now: float) -> bool:
        """The distributor is starving on an empty ready queue while URLs wait in the sieve's bucket."""
        sieve = self.sieve
        return (
            sieve.ready_count == 0
            and sieve.pending_count > 0
            and now >= self._next_flush
            and self.distributor.wants_sieve()
        )

    def flush(self) -> None:
        """Run the forced sieve flush :meth:`wants_flush` asked for (it stops the loop: the engine times it)."""
        self.sieve.flush()

    def flush_sieve(self, started: float, ended: float) -> None:
        """Record a forced flush the engine ran from ``started`` to ``ended`` (BUbiNG: wait 10× its cost)."""
        self._next_flush = ended + max(self.settings.sieve_flush_interval, 10 * (ended - started))

    def distribute(self, now: float, budget: int = 1000) -> list[VisitState]:
        """Move URLs towards the workbench, and up to ``budget`` due revisits to the front of their
        hosts' queues; returns new visit states the engine must resolve."""
        new_hosts = self.distributor.step(budget)
        for url in self.revisits.due(now, budget):
            vs = self.distributor.place_revisit(url)
            if vs is not None:
                new_hosts.append(vs)
        self.resolving += len(new_hosts)
        return new_hosts

    def distributor_deadline(self, now: float) -> float:
        """When the distributor should look again, unless woken: in about a second, on a whole second of the clock
        (with the agent's status lines, one wake-up for both); sooner while URLs wait in the sieve's bucket and
        none is ready (a flush may be due), and no later than the next revisit."""
        sieve, wake = self.sieve, round(now) + 1.0
        if sieve.pending_count and not sieve.ready_count:
            wake = now + max(0.01, self.settings.sieve_flush_interval)
        revisit = self.revisits.next_time()
        return wake if revisit is None else min(wake, revisit)

    def next_revisit(self) -> float | None:
        """When the earliest pending revisit may fall due, if any."""
        return self.revisits.next_time()

    # -- step 3: DNS ---------------------------------------------------------------------

    def resolved(self, vs: VisitState, ip: str, expires: float = math.inf) -> None:
        """``vs`` resolved to ``ip`` until ``expires`` (monotonic): a new host joins its IP's entry, a
        re-resolved one moves there (see :meth:`readdress`)."""
        self.resolving -= 1
        vs.retries = 0
        vs.ip_expires, vs.ip_used = expires, False
        if vs.entry is None:
            self.workbench.attach(vs, ip)
        else:
            self.workbench.move(vs, ip)

    def readdress(self, vs: VisitState) -> None:
        """An acquired host's address expired: the engine resolves it again instead of fetching."""
        self.workbench.readdress(vs)
        self.resolving += 1

    def resolve_failed(self, vs: VisitState, *, permanent: bool) -> float | None:
        """A lookup failed: returns the back-off before retrying, or None if the host was purged."""
        self.resolving -= 1
        vs.transition("failed")
        vs.retries += 1
        if permanent or vs.retries > 2:
            self.purge(vs, "dns")
            return None
        return 60.0 * (1 << (vs.retries - 1))

    def purged_meanwhile(self, vs: VisitState) -> bool:
        """Whether ``vs`` was purged while its address was asked for (another machine took its host):
        then its resolution is over, and the answer is not to be used."""
        purged = vs.phase is Phase.PURGED
        self.resolving -= purged
        return purged

    def retry_resolve(self, vs: VisitState) -> None:
        """The engine is resolving ``vs`` again after a back-off."""
        vs.transition("resolve")
        self.resolving += 1

    def refused(self, vs: VisitState, reason: str) -> None:
        """The host resolved to an address the configuration forbids, or another machine's: drop it here for good."""
        self.resolving -= 1
        self.purge(vs, reason)

    def purge(self, vs: VisitState, reason: str) -> None:
        """Forget a host's queued URLs (memory and disk); later URLs of it are dropped."""
        dropped = self.workbench.drop_urls(vs) + self.distributor.forget_disk(vs)
        if vs.retry_path is not None:
            vs.retry_path = None
            self.retrying -= 1
            dropped += 1
        if vs.entry is not None and vs.phase is not Phase.ACQUIRED:
            self.workbench.detach(vs)
        vs.transition("purge")
        self.drops[f"purged_{reason}"] += max(dropped, 1)

    # -- step 4: fetching ----------------------------------------------------------------

    def acquire(self, now: float) -> VisitState | None:
        """A visit state host and IP politeness allow to fetch now, if any (then call :meth:`hand_out`)."""
        return self.workbench.acquire(now)

    def hand_out(self, vs: VisitState, now: float) -> bool:
        """True: give the acquired ``vs`` to the fetchers. False: its address expired, so it was
        handed back unfetched and the engine must resolve it again (:meth:`resolved` then)."""
        if vs.address_due(now):
            self.readdress(vs)
            return False
        vs.ip_used = True
        return True

    def rank(self, vs: VisitState) -> float:
        """Ranked mode: the policy's rank of the host's next URL (lower goes first). A URL to retry
        or a due revisit goes before any lane: -inf."""
        if vs.retry_path is not None or vs.due is not None:
            return -math.inf
        lanes = vs.lanes
        if lanes is None or not (lanes.memory or lanes.disk):
            return math.inf
        ranks = self.distributor.lane_ranks(vs)
        return ranks(lanes.best(ranks))

    def site_of(self, vs: VisitState) -> str | None:
        """Ranked mode: the site ``vs`` belongs to for the rank gate (``CrawlPolicy.site_of``), or None."""
        return self.policy.site_of(vs.scheme_authority)

    def next_deadline(self) -> float | None:
        """When the workbench's first host becomes polite to fetch (maybe in the past), or None."""
        return self.workbench.next_deadline()

    def next_url(self, vs: VisitState) -> str:
        """The next URL of an acquired visit state: a failed one being retried, then due revisits (with
        their validators, in ``vs.validators``), then the backlog (ranked: the lane of best rank's first)."""
        validators = b""
        if vs.retry_path is not None:
            path_query, vs.retry_path = vs.retry_path, None
            self.retrying -= 1
            path, validators = detach(path_query)
        elif vs.due is not None:
            path_query = self.workbench.pop_due(vs)
            path, validators = detach(path_query)
        elif vs.lanes is not None:
            path = path_query = self._next_in_lanes(vs)
        else:
            path = path_query = self.workbench.pop_url(vs)
            if not len(vs.queue):
                self.distributor.emptied(vs)
        vs.in_flight, vs.validators = path_query, validators
        return vs.scheme_authority + path.decode()

    def _next_in_lanes(self, vs: VisitState) -> bytes:
        lanes = vs.lanes
        assert lanes is not None
        lane = lanes.best(self.distributor.lane_ranks(vs))
        if lane not in lanes.memory:
            self.distributor.refill_lane(vs, lane)
        path_query = self.workbench.pop_lane(vs, lane)
        if not len(lanes):
            self.distributor.emptied(vs)
        return path_query

    def release(self, vs: VisitState, end: float, *, host_next: float | None = None, ip_next: float | None = None) -> None:
        """Give back an acquired visit state; its host and IP delays count from ``end`` (see
        ``Workbench.release``). ``host_next=vs.next_fetch`` hands it back without charging the host."""
        vs.in_flight = None
        self.workbench.release(vs, end, host_next=host_next, ip_next=ip_next)

    def set_delays(self, *, host_delay: float | None = None, ip_delay: float | None = None) -> None:
        """Change politeness live, from each host's and IP's next fetch on: a host waits the larger
        of ``host_delay`` and its robots.txt Crawl-delay."""
        if host_delay is not None:
            self.distributor.host_delay = host_delay
            for vs in self.distributor.host_to_visit_state.values():
                vs.host_delay = self._host_delay(vs, vs.robots.crawl_delay if vs.robots is not None else None)
        if ip_delay is not None:
            self.workbench.ip_delay = ip_delay

    # -- robots.txt (step 6) ---------------------------------------------------------------

    def robots_url(self, vs: VisitState) -> str:
        """Where the host's robots.txt is fetched from now (a redirect on the same host moves it)."""
        return vs.scheme_authority + vs.robots_path

    def robots_redirected(self, vs: VisitState, path: str, end: float) -> None:
        """robots.txt redirected to ``path`` on the same host: the next hop is fetched at the host's next turn."""
        vs.robots_path = path
        vs.robots_hops += 1
        self.release(vs, end)

    def robots_failed(self, vs: VisitState, end: float, backoff: float) -> bool:
        """Fetching robots.txt failed remotely. True: it will be retried after a back-off (as for
        :meth:`failed`) and the host was released. False: retries ran out; the engine then calls
        :meth:`robots_fetched` with rules for an unreachable robots.txt."""
        return self._back_off(vs, end, backoff)

    def robots_fetched(self, vs: VisitState, rules: Rules, fetched_wall: float, end: float) -> None:
        """The host's robots.txt rules, fetched at wall-clock ``fetched_wall`` (they outlive the
        process), take effect; its delay becomes the larger of the politeness delay and their
        Crawl-delay, and the host is released."""
        vs.robots, vs.robots_fetched = rules, fetched_wall
        vs.robots_path, vs.robots_hops, vs.retries = "/robots.txt", 0, 0
        vs.host_delay = self._host_delay(vs, rules.crawl_delay)
        self.release(vs, end)

    def _host_delay(self, vs: VisitState, crawl_delay: float | None) -> float:
        """The larger of the politeness delay and the host's Crawl-delay; a deprioritized host's, at least
        :attr:`quality_delay`."""
        delay = max(self.distributor.host_delay, crawl_delay or 0.0)
        if self.quality is not None and vs.scheme_authority in self.quality.deprioritized:
            delay = max(delay, self.quality_delay)
        return delay

    # -- the host quality filter -------------------------------------------------------------

    @property
    def quality_delay(self) -> float:
        """The least delay of a deprioritized host: ten times the politeness delay, and at least a minute."""
        return max(DEPRIORITIZED_DELAY, 10 * self.distributor.host_delay)

    def quality_wants(self, url: str) -> bool:
        """The quality filter is on and has not scored ``url``'s host yet: the engine gives it the page."""
        return self.quality is not None and self.quality.wants(split(url)[0])

    def quality_page(self, url: str, read: Callable[[], PageText]) -> Verdict | None:
        """A page of a host the filter samples (:meth:`quality_wants`), its text read by ``read()`` if the
        filter reads this one (``frontier.quality.reads_page``); once the host's pages are in, its
        verdict, acted upon: "stop" purges the host (its queued URLs are counted as ``purged_quality``,
        its later links as ``quality``), "deprioritize" slows it to :attr:`quality_delay`."""
        assert self.quality is not None
        host, hosts = split(url)[0], self.distributor.host_to_visit_state
        vs = hosts.get(host)
        entry = vs.entry if vs is not None else None
        verdict = self.quality.add(host, read, entry.ip if entry is not None else None,
                                   entry.hosts if entry is not None else 1, self.distributor.ip_of, len(hosts))
        if verdict is None or vs is None:
            return verdict
        if verdict.action == "stop" and vs.phase is not Phase.PURGED:
            self.purge(vs, "quality")
        elif verdict.action == "deprioritize":
            vs.host_delay = self._host_delay(vs, vs.robots.crawl_delay if vs.robots is not None else None)
        return verdict

    # -- outcomes ----------------------------------------------------------------------------

    def failed(self, vs: VisitState, url: str, end: float, *, backoff: float, breaks_host: bool, error: str) -> None:
        """A fetch failed remotely (``error``, the kind): retry the URL after a doubling back-off,
        then give up (the host is purged if the error ``breaks_host``); the policy hears of each."""
        final = not self._back_off(vs, end, backoff, retry=vs.in_flight or split(url)[1].encode())
        if final:
            vs.retries = 0
            if breaks_host:
                self.purge(vs, "unreachable")
            else:
                self.drops["fetch_failed"] += 1
            self.release(vs, end)
        self.add_revisits(self.policy.on_failed(url, error, end, final))

    def _back_off(self, vs: VisitState, end: float, backoff: float, *, retry: bytes | None = None) -> bool:
        """Count a failed fetch of ``vs``. While retries are left, release it for another try after
        ``backoff`` doubled at each failure (at least its delay), ``retry`` (a path) first, and
        return True; False once they ran out (``vs`` is still acquired)."""
        vs.retries += 1
        if vs.retries > self.settings.max_fetch_retries:
            return False
        if retry is not None:
            vs.retry_path = retry
            self.retrying += 1
        self.release(vs, end, host_next=end + max(vs.host_delay, backoff * (1 << (vs.retries - 1))))
        return True

    def succeeded(self, vs: VisitState) -> None:
        vs.retries = 0
        vs.fetched += 1

    def fetcher_waited(self) -> None:
        self.distributor.fetcher_waited()

    def fetched(self, page: FetchedPage, now: float, validators: bytes = b"") -> None:
        """Show a response of a page URL (any status) to the policy, before its links are offered (only when
        :attr:`wants_pages`), and schedule the revisits it asks for (one of its own URL carries ``validators``)."""
        self.add_revisits(self.policy.on_fetched(page, now), page.url, validators)

    def deferred(self, vs: VisitState, end: float, wait: float) -> None:
        """A 429: the URL out goes first again (validators kept) after ``wait`` seconds from ``end``; no failure."""
        vs.retry_path = vs.in_flight
        self.retrying += 1
        self.release(vs, end, host_next=end + max(vs.host_delay, wait))

    def add_revisits(self, revisits: Iterable[Revisit], url: str = "", validators: bytes = b"") -> None:
        for revisit in revisits:
            self.revisits.add(attach(revisit.url.encode(), validators if revisit.url == url else b""), revisit.at)

    # -- summaries -------------------------------------------------------------------------

    def idle(self) -> bool:
        """Nothing left anywhere: no URL in the sieve, workbench, disk, DNS or out with a fetcher."""
        wb = self.workbench
        return (
            self.sieve.ready_count == 0
            and self.sieve.pending_count == 0
            and wb.urls == 0
            and self.retrying == 0
            and wb.statistics().acquired == 0
            and self.resolving == 0
            and not len(self.revisits)
            and self.virtualizer.statistics().items == 0
        )

    def statistics(self) -> FrontierStatistics:
        sieve = self.sieve
        return FrontierStatistics(
            workbench=self.workbench.statistics(),
            distributor=self.distributor.statistics(),
            sieve_known=sieve.known_count,
            sieve_pending=sieve.pending_count,
            sieve_ready=sieve.ready_count,
            disk_urls=self.virtualizer.statistics().items - self.revisits.on_disk,
            resolving=self.resolving,
            revisits=len(self.revisits),
            discovered=self.discovered,
            cache_hits=self.cache_hits,
            dup_lookups=self.dup_lookups,
            drops=dict(self.drops),
            policy={name: dict(table) for name, table in self.policy.counters().items()},
            quality=self.quality.statistics() if self.quality is not None else {},
        )

    def close(self) -> None:
        """Release the files; the last checkpoint stays the state to resume from.

        With none, reopening is like restarting after a crash before the first one. The sieve
        and the virtualizer never checkpoint alone: without the visit states, their state would
        lose the URLs held in memory and give those on disk to whichever new host gets the id."""
        self.sieve.close(checkpoint=False)
        self.virtualizer.close(checkpoint=False)
