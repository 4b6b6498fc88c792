"""A machine leaving a crawl over several (issue 17, item 4), with ``cluster.departure = "take_over"``:
how one surviving agent takes its hosts. (By default a survivor adopts the machine instead,
``engine/adoption.py``: it resumes its agents from their own checkpoints, nothing is re-derived and
no host moves, at a cost bounded by one checkpoint interval of the machine's archive; but that
survivor then runs two machines' agents until the crawl's end or the machine's return. A takeover
spreads them over every survivor's agents, at the cost of reading archives: O(the pages of the
whole crawl) per surviving agent, ``bench/RESULTS.md``. The rejoin below serves a machine that left
this way; the hand-over and the IP follow-up also serve a machine joining.)

When a machine's entry expires (``engine/cluster.py``), every survivor's supervisor tells its
agents which machines are still live; each agent then routes by the ring over those
(``LinkRouter.leave``), in which the hosts of the machine gone belong to the survivors' agents and
no other host moves. What the machine gone had queued for those hosts is **re-derived**, not
carried over: every URL queued anywhere was a seed, or a link or redirect target of a page some
machine stored, and every stored page is in its machine's WARC files, with a metadata record
listing the links as they were discovered. So an agent taking hosts over (:func:`take_over`)

1. reads the WARC files of each machine gone (or, when its own machine rejoins or it takes back
   hosts it had handed to a machine gone, of every other live machine, which crawled its hosts
   meanwhile), on shared storage (``cluster.machines_root/NODE``; on one box, that machine's
   ``--out`` folder): every page stored there goes into its skip set (``Fetchers.skip``: never
   fetched again), not only those of the hosts it owns by name, since a host may be handed to it
   later by its IP (``LinkRouter.hand_off``); and every link it now owns is discovered (its sieve
   drops those it knew);
2. reads its own WARC files: every link to a host that moved is routed again, by the new ring, to
   its new owner (itself, another agent of its machine, another machine's through the bridge).
   This covers the links it had sent to the machine gone (in a spool, in the stream, in that
   machine's inbox or frontier), all lost with it: a page is stored before its links are routed;
3. discovers the seeds it now owns;
4. routes the links it held back (``LinkRouter.held``): those that reached it for a host it did not
   own yet, from an agent that switched first. Held until now, none can be queued before step 1 put
   the stored pages into the skip set.

The agent checkpoints right after, so the skip set and what reached its sieve survive a crash.

*A second departure* (a machine that rejoined leaves again): the survivors' sieves remember the
URLs of its hosts from the first takeover, so step 1 and the links rerouted to them offer those
URLs in vain. What such a sieve let through was fetched (stored: nothing to do), or was still
queued, or left the sieve later, when the rejoin took the host from this agent; so the agent keeps
exactly those: :func:`hand_over` does not drop a host's queued URLs but keeps them
(``LinkRouter.give``, with those that leave the sieve later), and when the host comes back
(``LinkRouter.settle``: the ring over ``live`` gives it to this agent again; or its owner by name
hands it on by its IP) they are queued again past the sieve, as the URLs of a host taken back
from a machine gone are, and the skip set drops those stored meanwhile. *Why keep them, and not
make the sieve forget the hosts given up:* the sieve holds 64-bit fingerprints of whole URLs, sorted,
with no trace of their host, so forgetting a host means knowing its URLs, which is what is kept
here anyway, and a rewrite of the whole store per rejoin. And *why not let every URL of a host that
comes back past the sieve:* those come from several places (this agent's archive, the gone
machine's, the links the other survivors reroute, long after), so a host would need a second
sieve of its own for as long as the crawl runs; the URLs kept are only those queued at the
rejoin, held in memory and in the checkpoint like those of a host handed to its IP's machine.

*Why re-derive, and not keep every discovered URL in a JetStream stream by host bucket for a new
owner to replay:* that would put every link of the crawl through the broker and keep it for the
crawl's life, where the exchange carries only the links that cross machines; the WARC files are
already there, already the record of what was stored, and the only way to know which pages not to
fetch again. The price is reading archives (metadata records: no parsing) once per departure:
each surviving agent reads its own archive and that of the machines gone. On one box the shared
storage is the machines' output folders side by side; on several, a shared mount holding them.

*Politeness*: a machine is gone when its entry expired, ``cluster.ttl`` after its last beat; it was
killed, or it fenced itself (a supervisor that cannot beat for half the TTL stops its crawl), so
the new owner's first fetch of one of its hosts comes at least the TTL after the old owner's last,
and the TTL is above the host delay. A host whose robots.txt asks a longer Crawl-delay waits it out
(:func:`wait_out_crawl_delays`): step 1 notes, per host, when the archives read last stored a fetch
of it (its WARC-Date, the start, plus its metadata's ``fetchTimeMs``) and its robots.txt there, and the
visit state this agent makes for it is not fetched (robots.txt first: its own rules set the delay
from then on) before that end plus the Crawl-delay. Not covered: a fetch the old owner had in flight
(not stored), a last fetch that was a robots.txt (no fetch time: its start is taken), and the hosts a
rejoining machine takes back while it still has their visit states (only the larger of the host and
IP delays then).
The gone machine's fetches in flight were not stored, so they are fetched again: the only repeats.
When a machine rejoins, the agents that lose hosts to it purge them (:func:`hand_over`) and hand on
the hosts of the IPs that now hash to it (``LinkRouter.follow_ips``) while paused with no fetch in
flight (``engine/machines.py``), before it reads their archives and starts, the larger of the host
and IP delays after the last of them named it: so no host and no IP is fetched by two machines
closer than its delay.
"""

from __future__ import annotations

import dataclasses
import sys
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.checkpointer import Checkpointer
from engine.crew import Crew
from engine.ownership import GlobalRing
from engine.parse import LinkRules
from engine.robots import RobotsRules
from engine.resume import Replayed, replay, replay_file
from engine.routing import LinkRouter
from frontier.frontier import Frontier
from frontier.policy import Revisit
from frontier.urls import fingerprint, host_of, split
from frontier.visit_state import Phase


@dataclass
class Takeover:
    """What one takeover did, for the agent's ``stats.json``."""

    sources: list[str]  # the machines whose archives it read: those gone, or on a rejoin the others
    handed_over: int = 0  # hosts it purged: another machine's agent owns them now (a machine rejoined)
    handed_on: int = 0  # hosts it crawled whose IP another machine's agent owns now (a machine rejoined)
    skipped: int = 0  # pages the machines gone stored, of hosts this agent now owns: never fetched again
    rederived: int = 0  # links of the machines gone's pages that this agent now owns, offered to its sieve
    rerouted: int = 0  # links of this agent's own pages to a host that moved, routed again
    reclaimed: int = 0  # hosts it had handed to their IP's machine, which left: its own again
    revived: int = 0  # hosts it had given up to a machine that rejoined, which left again: its own again
    seeds: int = 0
    read: int = 0  # fetches read back from the archives, the sources' and its own: the cost grows with these
    seconds: float = 0.0  # wall time of the takeover, during which the agent fetches nothing
    cpu_seconds: float = 0.0  # the agent's CPU meanwhile (the wall time depends on the machine's load)


def archive_of(folder: Path) -> Iterator[Path]:
    """The WARC files of a machine's output folder, finished or open."""
    return iter(sorted((folder / "warc").glob("*.warc.gz*")))


def stored_in(folder: Path, rules: LinkRules, max_body_bytes: int) -> Iterator[Replayed]:
    """Every fetch a machine's output folder holds; a torn tail (a kill in a write) is left out: the reader
    stops at the first member that is not whole."""
    for path in archive_of(folder):
        with open(path, "rb") as f:
            yield from replay_file(f, rules=rules, max_body_bytes=max_body_bytes)


def take_over(router: LinkRouter, before: Sequence[str], live: Sequence[str], skip: set[int], seeds: Sequence[str],
              sources: Mapping[str, Path], own: tuple[Path, str], rules: LinkRules, max_body_bytes: int,
              crawl_delay: Callable[[bytes], float | None]) -> Takeover:
    """Route by the ring over ``live`` instead of ``before`` and take this agent's share of the hosts
    that moved to it, in the steps of the module's docstring: step 1 reads the archives of
    ``sources`` (node → its output folder: the machines gone, or on a rejoin every other live one)
    and, with ``crawl_delay`` (a robots.txt body's), when each host may be fetched here first."""
    assert router.members is not None
    started, cpu = time.monotonic(), time.process_time()
    old = GlobalRing(router.members, before)
    router.route_by(live)
    settled = router.settle(before)
    frontier = router.crew.frontier
    given_up = settled.given_up
    report = Takeover(sorted(sources), reclaimed=len(settled.back), revived=len(settled.revived),
                      handed_over=hand_over(router, lambda a: a not in given_up))
    if set(live) - set(before):  # a machine rejoined: this one's supervisor paused its agents till no fetch is in flight
        report.handed_on = router.follow_ips()
    reclaimed = set(settled.back)  # the links to them this agent had forwarded before its sieve are in its archive
    moved: dict[str, bool] = {}

    def has_moved(url: str) -> bool:
        authority = split(url)[0]
        answer = moved.get(authority)
        if answer is None:
            answer = moved[authority] = (old.agents_list[old.owner(host_of(authority))][0] not in live
                                         or authority in reclaimed)
        return answer

    last: dict[str, float] = {}  # per host, the end of the last fetch the sources stored
    robots: dict[str, tuple[float, bytes]] = {}  # per host, the latest robots.txt they stored
    for folder in sources.values():
        for page in stored_in(folder, rules, max_body_bytes):
            report.read += 1
            authority = split(page.url)[0]
            last[authority] = max(last.get(authority, 0.0), page.ended)
            if page.robots_body and page.ended >= robots.get(authority, (0.0, b""))[0]:
                robots[authority] = (page.ended, page.robots_body)
            if not page.robots:  # whatever its owner by name: a host may be handed to this agent later
                skip.add(fingerprint(page.url))
                report.skipped += 1
                if router.owner(authority) == router.index:  # sent with the host if handed on by its IP
                    router.stored_urls.setdefault(authority, []).append(page.url)
            mine = router.mine(page.links)
            if mine:
                report.rederived += len(mine)
                frontier.discover(mine, page.url, None)
    wait_out_crawl_delays(frontier, last, {a: body for a, (_, body) in robots.items()}, crawl_delay)
    # past the sieve, which let them through before: the skip set now holds those stored
    frontier.add_revisits(Revisit(url, 0.0) for url in settled.again)
    directory, prefix = own
    for page in replay(directory, prefix, {}, rules=rules, max_body_bytes=max_body_bytes) if set(before) - set(live) or reclaimed else ():
        report.read += 1
        links = [link for link in page.links if has_moved(link)]
        if links:
            report.rerouted += len(links)
            router.discover(links, page.url, None)
    mine = router.mine(seeds)
    report.seeds = len(mine)
    frontier.discover(mine)
    router.release_held()
    router.flush()
    report.seconds = round(time.monotonic() - started, 3)
    report.cpu_seconds = round(time.process_time() - cpu, 3)
    return report


def wait_out_crawl_delays(frontier: Frontier, last: Mapping[str, float], robots: Mapping[str, bytes],
                          crawl_delay: Callable[[bytes], float | None]) -> None:
    """No host is fetched here (its robots.txt first) before its Crawl-delay is over since another machine's
    last fetch of it (``last``: epoch seconds; ``robots``: the robots.txt it fetched). The TTL (a machine
    leaving) or the host delay (one rejoining) that separate them already may be shorter."""
    wall, now = time.time(), time.monotonic()
    first = frontier.distributor.first_fetch
    for authority, body in robots.items():
        due = last[authority] + (crawl_delay(body) or 0.0) - wall
        if due > 0:
            first[authority] = max(first.get(authority, 0.0), now + due)


def hand_over(router: LinkRouter, keeps: Callable[[str], bool]) -> int:
    """Purge every host whose scheme and authority ``keeps`` refuses (another agent owns it now): it crawls
    none of its URLs, queued or later, but keeps them (``LinkRouter.give``); returns how many hosts."""
    lost = [vs for authority, vs in router.crew.frontier.distributor.host_to_visit_state.items()
            if vs.phase is not Phase.PURGED and not keeps(authority)]
    for vs in lost:
        router.give(vs)
    return len(lost)


class Takeovers:
    """An agent's takeovers, each when its supervisor says which machines are live (``ring``): when
    machines leave, and at the agent's start in a crawl some have left (its checkpoint names the
    ring it routed by, and it takes over what it has not yet)."""

    def __init__(self, crew: Crew, router: LinkRouter, skip: set[int], seeds: Sequence[str],
                 checkpointer: Checkpointer, rules: LinkRules) -> None:
        self.crew, self.router, self.skip, self.seeds = crew, router, skip, seeds
        self.checkpointer, self.rules = checkpointer, rules
        self.done: list[Takeover] = []

    def ring(self, live: list[str], sources: Sequence[str] = ()) -> None:
        """Crawl by the ring over the ``live`` machines. The hosts this agent loses (machines rejoined) are
        purged; it takes its share of the hosts of the machines that left, and on its own machine's rejoin
        (``sources``: the others) what they stored of its hosts; then it checkpoints, so that what it took
        survives a crash."""
        crew, router, config = self.crew, self.router, self.crew.config
        before = list(router.live)
        gone = sorted(set(before) - set(live))
        if not gone and not sources:
            router.route_by(live)
            router.settle(before)  # given up: no longer taken, so purged below
            router.release_held()
            handed = hand_over(router, lambda authority: router.owner(authority) == router.index)
            moved = router.follow_ips() if set(live) - set(before) else 0  # paused: no fetch in flight
            if handed or moved:
                self.done.append(Takeover([], handed_over=handed, handed_on=moved))
            return
        c = config.cluster
        root = config.machines_root
        rejoined = bool(sources)
        if not rejoined and router.handed_away(live):  # links to the hosts it takes back are in every machine's archive
            sources = [n for n in live if n != c.node]
        agent, most = config.engine.user_agent, config.politeness.max_crawl_delay
        report = take_over(router, before, live, self.skip, self.seeds, {n: root / n for n in [*gone, *sources]},
                           (self.checkpointer.warc, self.checkpointer.prefix), self.rules, config.network.max_body_bytes,
                           lambda body: RobotsRules.parse(body, agent, max_crawl_delay=most).crawl_delay)
        self.done.append(report)
        print(f"crawl: agent {router.index} of {c.node}: took over its share of {', '.join(report.sources)}: "
              f"{report.skipped} pages stored there skipped, {report.rederived} links re-derived, "
              f"{report.rerouted} rerouted; {report.read} fetches read in {report.seconds:g} s", file=sys.stderr, flush=True)
        if crew.full is None:
            with crew.full_stops():
                self.checkpointer.checkpoint()
        crew.distributor_alarm.fire()

    def summary(self) -> dict[str, Any]:
        """``stats.json``'s ``takeovers``, when there were any."""
        return {"takeovers": [dataclasses.asdict(t) for t in self.done]} if self.done else {}
