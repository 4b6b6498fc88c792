"""The frontier facade: the one object the engine talks to.

It owns the URL cache, the sieve, the workbench, the virtualizer, the distributor, the
scope (with its trap limits), the URL-shape budget and the crawl policy, and exposes the
operations of ARCHITECTURE.md's steps: ``discover`` (links in), ``distribute`` (sieve →
workbench, returns hosts to resolve), ``resolved``/``resolve_failed`` (DNS results in),
``acquire``/``next_url``/``release`` (the fetch token), ``fetched`` (the policy's hook), and
``statistics``.

Every method is synchronous and takes ``now`` where time matters; the engine performs the
I/O these calls ask for. Nothing here reads a clock.
"""

from __future__ import annotations

import heapq
import itertools
import math
from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

import xxhash

from frontier import snapshot
from frontier.distributor import Distributor, DistributorStatistics
from frontier.page import FetchedPage, LinkContext
from frontier.policy import BreadthFirst, CrawlPolicy
from frontier.scope import Scope
from frontier.shapes import ShapeBudget
from frontier.sieve import MercatorSieve
from frontier.url_cache import UrlCache
from frontier.urls import split
from frontier.virtualizer import WorkbenchVirtualizer
from frontier.visit_state import Phase, Rules, VisitState
from frontier.workbench import Workbench, WorkbenchStatistics

_fingerprint = xxhash.xxh3_64_intdigest


@dataclass(frozen=True, slots=True)
class FrontierSettings:
    """Sizes and delays; ``engine/config.py`` fills these from crawl.toml's [frontier] and [politeness]."""

    host_delay: float = 4.0
    ip_delay: float = 0.5
    workbench_bytes: int = 512 << 20
    sieve_bucket_bytes: int = 16 << 20
    url_cache_bytes: int = 64 << 20
    virtualizer_segment_bytes: int = 64 << 20
    max_urls_per_host: int = 100_000
    max_urls_per_shape: int = 0  # new URLs per host differing only in digits (frontier/shapes.py); 0 = no limit
    required_front: int = 1000
    front_step: int = 1000
    sieve_flush_interval: float = 1.0
    max_fetch_retries: int = 5
    fsync: bool = True  # checkpoints survive a power loss, not only a crash


@dataclass(frozen=True, slots=True)
class FrontierStatistics:
    workbench: WorkbenchStatistics
    distributor: DistributorStatistics
    sieve_known: int
    sieve_pending: int
    sieve_ready: int
    disk_urls: int
    resolving: int
    revisits: int
    discovered: int
    cache_hits: int
    drops: dict[str, int] = field(default_factory=dict)


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
    ) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        self._used_before = any(directory.iterdir())  # then a previous process may have fetched just now
        self.directory = directory
        self.settings = settings
        self.policy = policy or BreadthFirst()
        self.scope = scope or Scope("any")
        self.schedule = schedule  # the schedule filter (frontier/filters); None accepts all
        self.ranked = self.policy.ranks_urls
        self._policy_filters = type(self.policy).accept_link is not BreadthFirst.accept_link
        self.cache = UrlCache(settings.url_cache_bytes)
        # A checkpoint, if there is one, says where the sieve and the virtualizer resume from.
        self._saved: tuple[dict, bytes] | None = None
        sieve_from = index_from = None
        if self.checkpoint_path.exists():
            meta, index_from, hosts = snapshot.read(self.checkpoint_path)
            sieve_from, self._saved = meta["sieve"], (meta, hosts)
        self.sieve = MercatorSieve(
            directory / "sieve", bucket_bytes=settings.sieve_bucket_bytes, fsync=settings.fsync, resume_from=sieve_from
        )
        self.virtualizer = WorkbenchVirtualizer(
            directory / "virtualizer",
            segment_bytes=settings.virtualizer_segment_bytes,
            fsync=settings.fsync,
            resume_from=index_from,
        )
        self.workbench = Workbench(settings.ip_delay)
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
            ranked=self.ranked,
            shapes=self.shapes,
        )
        self.resolving = 0
        self.retrying = 0
        self.discovered = 0
        self.cache_hits = 0
        self._revisits: list[tuple[float, int, bytes]] = []
        self._revisit_seq = itertools.count()
        self._next_flush = 0.0

    # -- checkpoints -------------------------------------------------------------------

    @property
    def checkpoint_path(self) -> Path:
        return self.directory / "checkpoint"

    @property
    def has_checkpoint(self) -> bool:
        """A checkpoint exists: :meth:`restore` will resume from it."""
        return self._saved is not None

    def checkpoint(self, now: float, extra: dict) -> None:
        """Make the whole frontier durable at once, with the engine's ``extra`` state.

        The sieve and the virtualizer sync their data first; the snapshot file, replaced
        atomically, is the commit; only then do they delete what the previous one needed.
        """
        sieve_state = self.sieve.prepare_checkpoint()
        index = self.virtualizer.prepare_checkpoint()
        d = self.distributor
        meta = {
            "version": 1,
            "sieve": sieve_state,
            "required_front": d.required_front,
            "counters": {"discovered": self.discovered, "cache_hits": self.cache_hits, "drops": dict(self.drops)},
            # monotonic instants mean nothing to another process: keep what is left to wait
            "revisits": [[at - now, data.decode("latin-1")] for at, _, data in self._revisits],
            "extra": extra,
            "shapes": self.shapes.state() if self.shapes is not None else None,
        }
        hosts = snapshot.encode_hosts(d.host_to_visit_state.values(), self.ranked)
        snapshot.write(self.checkpoint_path, meta, index, hosts, fsync=self.settings.fsync)
        self.sieve.commit_checkpoint(sieve_state)
        self.virtualizer.commit_checkpoint(index)

    def restore(
        self, now: float, rules: Callable[[bytes, float], Rules | None] | None = None
    ) -> tuple[list[VisitState], dict]:
        """Resume from the checkpoint: returns the visit states to resolve and the engine's extra.

        The previous process may have fetched any host or IP just before it died, even with
        no checkpoint yet, so no host is fetched before ``now`` + its delay, and no IP before
        ``now`` + the IP delay, unless the directory was empty when opened.

        ``rules(saved, fetched)`` turns a host's saved robots.txt rules and their wall-clock
        fetch time back into the engine's rules, or None if they are to be fetched again
        (expired); without it every robots.txt is fetched again.
        """
        if self._used_before:
            self.workbench.not_before = now + self.settings.ip_delay
            self.distributor.not_before = now + self.settings.host_delay
        if self._saved is None:
            return [], {}
        meta, hosts = self._saved
        self._saved = None
        d = self.distributor
        d.required_front = max(d.required_front, meta["required_front"])
        counters = meta["counters"]
        self.discovered, self.cache_hits = counters["discovered"], counters["cache_hits"]
        self.drops.update(counters["drops"])
        if self.shapes is not None and meta.get("shapes"):  # a checkpoint taken with the budget off has none
            self.shapes.load(meta["shapes"])
        for delay, data in meta["revisits"]:
            heapq.heappush(self._revisits, (now + delay, next(self._revisit_seq), data.encode("latin-1")))
        to_resolve = []
        for saved in snapshot.decode_hosts(hosts):
            vs = VisitState(saved.id, saved.scheme_authority, saved.host_delay, ranked=self.ranked)
            vs.scheduled, vs.fetched, vs.on_disk = saved.scheduled, saved.fetched, saved.on_disk
            vs.next_fetch = now + saved.host_delay
            if saved.robots is not None and rules is not None:
                vs.robots, vs.robots_fetched = rules(saved.robots, saved.robots_fetched), saved.robots_fetched
            d.restore(vs, [] if saved.purged else saved.items)
            if saved.purged:
                vs.transition("purge")
            elif vs.has_work or vs.on_disk:
                vs.transition("resolve")
                to_resolve.append(vs)
            # else it stays NEW until a URL for it arrives (Distributor._place resolves it then)
        self.resolving += len(to_resolve)
        return to_resolve, meta["extra"]

    # -- step 1: discovery -------------------------------------------------------------

    def discover(
        self, links: Iterable[str], parent: str | None = None, contexts: Iterable[LinkContext] | None = None
    ) -> int:
        """Offer canonical URLs to scope, policy, URL cache, trap limits and sieve; returns how many reached the sieve."""
        allows = self.scope.allows
        rejects = self.scope.rejects
        schedule = self.schedule
        policy = self.policy
        hosts = self.distributor.host_to_visit_state
        host_cap = self.settings.max_urls_per_host
        cache_add = self.cache.add
        enqueue = self.sieve.enqueue
        context_iter = iter(contexts) if contexts is not None else None
        accepted = 0
        for url in links:
            context = next(context_iter) if context_iter is not None else None
            scheme_authority = split(url)[0]
            if not allows(scheme_authority):
                self.drops["scope"] += 1
                continue
            if schedule is not None and not schedule(url):
                self.drops["schedule_filter"] += 1
                continue
            if self._policy_filters:
                reason = policy.accept_link(url, parent, context)
                if reason is not None:
                    self.drops[reason] += 1
                    continue
            vs = hosts.get(scheme_authority)
            if vs is not None and vs.scheduled >= host_cap:
                self.drops["host_limit"] += 1
                continue
            data = url.encode()
            fp = _fingerprint(data)
            if not cache_add(fp):
                self.cache_hits += 1
                continue
            # the trap limits depend on the URL alone: judged once, its later links are cache hits
            reason = rejects(url)
            if reason is not None:
                self.drops[reason] += 1
                continue
            if self.ranked:
                data = bytes([max(0, min(255, policy.priority(url, parent, context)))]) + data
            enqueue(data, fp)
            accepted += 1
        self.discovered += accepted
        return accepted

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

    def flush_sieve(self, started: float, ended: float) -> None:
        """Record a forced flush the engine ran from ``started`` to ``ended`` (BUbiNG: wait 10× its cost)."""
        self._next_flush = ended + max(self.settings.sieve_flush_interval, 10 * (ended - started))

    def distribute(self, now: float, budget: int = 1000) -> list[VisitState]:
        """Move URLs towards the workbench; returns new visit states the engine must resolve."""
        new_hosts = self.distributor.step(budget)
        while self._revisits and self._revisits[0][0] <= now:
            vs = self.distributor.place_revisit(heapq.heappop(self._revisits)[2])
            if vs is not None:
                new_hosts.append(vs)
        self.resolving += len(new_hosts)
        return new_hosts

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

    def retry_resolve(self, vs: VisitState) -> None:
        """The engine is resolving ``vs`` again after a back-off."""
        vs.transition("resolve")
        self.resolving += 1

    def refused(self, vs: VisitState, reason: str) -> None:
        """The host resolved to an address the configuration forbids: drop it for good."""
        self.resolving -= 1
        self.purge(vs, reason)

    def purge(self, vs: VisitState, reason: str) -> None:
        """Forget a host's queued URLs (memory and disk); later URLs of it are dropped."""
        dropped = self.workbench.drop_urls(vs) + self.virtualizer.remove(vs.id)
        if vs.retry_path is not None:
            vs.retry_path = None
            self.retrying -= 1
            dropped += 1
        vs.on_disk = 0
        if vs.entry is not None and vs.phase is not Phase.ACQUIRED:
            self.workbench.detach(vs)
        vs.transition("purge")
        self.drops[f"purged_{reason}"] += max(dropped, 1)

    # -- step 4: fetching ----------------------------------------------------------------

    def acquire(self, now: float) -> VisitState | None:
        return self.workbench.acquire(now)

    def next_deadline(self) -> float | None:
        return self.workbench.next_deadline()

    def next_revisit(self) -> float | None:
        """When the earliest revisit falls due, if any (the distributor should wake then)."""
        return self._revisits[0][0] if self._revisits else None

    def next_url(self, vs: VisitState) -> str:
        """The next URL of an acquired visit state (a failed one being retried comes first)."""
        if vs.retry_path is not None:
            path_query, vs.retry_path = vs.retry_path, None
            self.retrying -= 1
        else:
            path_query = self.workbench.pop_url(vs)
            if not len(vs.queue):
                self.distributor.emptied(vs)
        vs.in_flight = path_query
        return vs.scheme_authority + path_query.decode()

    def release(self, vs: VisitState, end: float, *, host_next: float | None = None, ip_next: float | None = None) -> None:
        vs.in_flight = None
        self.workbench.release(vs, end, host_next=host_next, ip_next=ip_next)

    def failed(self, vs: VisitState, url: str, end: float, *, backoff: float, breaks_host: bool) -> None:
        """A fetch failed remotely: retry the URL after a doubling back-off, then give up."""
        vs.retries += 1
        if vs.retries > self.settings.max_fetch_retries:
            vs.retries = 0
            if breaks_host:
                self.purge(vs, "unreachable")
            else:
                self.drops["fetch_failed"] += 1
            self.release(vs, end)
            return
        vs.retry_path = split(url)[1].encode()
        self.retrying += 1
        self.release(vs, end, host_next=end + max(vs.host_delay, backoff * (1 << (vs.retries - 1))))

    def succeeded(self, vs: VisitState) -> None:
        vs.retries = 0
        vs.fetched += 1

    def fetcher_waited(self) -> None:
        self.distributor.fetcher_waited()

    def fetched(self, page: FetchedPage) -> None:
        """Give a fetched page to the policy and schedule the revisits it asks for."""
        for revisit in self.policy.on_fetched(page):
            data = revisit.url.encode()
            if self.ranked:
                data = b"\x00" + data
            heapq.heappush(self._revisits, (revisit.at, next(self._revisit_seq), data))

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
            and not self._revisits
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
            disk_urls=self.virtualizer.statistics().items,
            resolving=self.resolving,
            revisits=len(self._revisits),
            discovered=self.discovered,
            cache_hits=self.cache_hits,
            drops=dict(self.drops),
        )

    def close(self) -> None:
        """Release the files; the last checkpoint stays the state to resume from.

        With none, reopening is like restarting after a crash before the first one. The sieve
        and the virtualizer never checkpoint alone: without the visit states, their state would
        lose the URLs held in memory and give those on disk to whichever new host gets the id."""
        self.sieve.close(checkpoint=False)
        self.virtualizer.close(checkpoint=False)
