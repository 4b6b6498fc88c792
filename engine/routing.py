"""Link routing: a page's links go to this agent's frontier or to the agent that owns their host.

Reads the follow filter (``filters.follow``), the consistent-hash ring
(``engine/ownership.py``) and the hosts ``[[credentials]]`` pin to an agent (``engine/credentials.py``); writes the frontier (``discover``, ``drop``) and, with several
agents, the link spools (``engine/link_exchange.py``), links and their contexts together.
A policy that answers ``owner(url)`` (``frontier/policy.py``) decides the agent of each URL it
knows before the host does, and a policy that sends ``messages`` gets spools of its own
(``OUT/policy/``). While links flow, the exchange task writes the buffered links and messages
out every few tens of milliseconds and takes in those the other agents sent; when nothing flows
it sleeps until a sender rings its doorbell (``engine/doorbell.py``) or this agent buffers a
link, so an idle agent costs no CPU. Never fetches, never touches the workbench.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.credentials import pinned_hosts
from engine.crew import Crew
from engine.doorbell import Doorbell, bell_path
from engine.link_exchange import BRIDGE, Inbox, Outbox, Position, decode_batch, encode_batch, peers
from engine.ownership import GlobalRing, HashRing, Member
from frontier.page import LinkContext
from frontier.policy import CrawlPolicy, Revisit
from frontier.urls import fingerprint, host_of, split
from frontier.visit_state import Phase, VisitState

EXCHANGE_PERIOD = 0.05  # seconds: a batch of links per receiver, while links flow
HANDED = "handed "  # then the sender's ring and a space, ahead of the parent of links handed to their IP's machine
STORED = "stored"  # the parent (no URL is a bare word) of a handed host's pages the sender knows stored


@dataclass
class Settled:
    """What :meth:`LinkRouter.settle` changed."""

    back: list[str]  # hosts this agent had handed to a machine gone: its own again
    again: list[str]  # URLs of the hosts back or revived that its sieve had let through: to queue past it
    given_up: set[str]  # hosts it had taken that their owner by name takes back (it rejoined): to purge
    revived: list[str]  # hosts it had given up that it owns again: their machine left again


class LinkRouter:
    """Agent ``index`` of ``agents``: routes links, and owns the spools of a several-agent crawl.

    In a crawl over several machines (``members``, with this machine's ``node``), hosts are hashed
    over the agents of every machine (``GlobalRing``); a link of another machine's agent goes to the
    spool ``OUT/remote/III-GGG`` (GGG: that agent's place in the ring), which the supervisor's bridge
    publishes (``engine/bridge.py``), and links from other machines arrive in this agent's inbox as
    from sender ``BRIDGE``. The ring is over every member until one leaves: then :meth:`route_by` makes
    the ring of the others (``engine/takeover.py``), and until then the links that reach this
    agent for a host it does not own (sent by an agent that made the new ring first) are held, not
    queued: the takeover (``engine/takeover.py``) must know which of their pages are stored already.
    Held links are routed by this agent's ring at its next ring change, or once held ``cluster.ttl``
    seconds: then they came from an agent still on the ring before this one's (a machine rejoined),
    and go on to their owner.

    *IP politeness across machines* (issue 17, item 3): every IP belongs to one machine, the one
    whose agent owns the IP on the ring (:meth:`hand_off`), and only that machine's agents fetch
    its hosts, polite among themselves through the machine's shared IP table. A host's owner by
    name learns its IP from DNS; if the IP's machine is another, it hands the host to the IP's agent
    there (``handed_to``): its queued URLs go there, and so does every later link of it, forwarded
    on arrival, with the parent marked :data:`HANDED` and the sender's ring, which makes the receiver
    take the host as its own (``taken``). A decision per host, not a round trip per fetch; both maps
    are in the checkpoint. Handed links from a sender on another ring are held like the others: one
    that took over a machine gone hands its hosts on by their IPs, and the receiver, which has not
    yet read that machine's archive, would fetch again the pages stored there. Released, they are
    taken if this agent's ring is now the sender's, else routed by name on its ring: a hand-off
    made on a ring this agent has left (a machine rejoined meanwhile) is the host's owner's to
    decide again, or two machines would crawl the host. When the ring grows (a machine rejoins:
    adding its points moves IPs to it alone), the IPs that moved leave this agent whole, while it is
    paused with no fetch in flight (:meth:`follow_ips`): the hosts it crawls there are handed on as at
    their DNS answer, a taken one relayed (its owner by name still sends its links here), and its
    earlier hand-offs follow their IP. When a machine leaves, only its IPs move, and the hosts handed
    to it are taken back and handed again by the new ring (:meth:`settle`).

    A host this agent gives up when a machine rejoins (:meth:`give`, :meth:`settle`) is purged but its
    URLs are kept (``given``): its sieve will not let them through again, and they are queued again past
    it if the host comes back (:meth:`_revive`: that machine left again, or the host is handed back by
    its IP; ``engine/takeover.py``)."""

    def __init__(self, crew: Crew, links: Path, index: int, agents: int,
                 members: list[Member] | None = None, node: str = "", live: Sequence[str] | None = None) -> None:
        """``live``: the machines to route by at the start, when this agent's own machine is joining and not
        among them yet: it owns no host until the others have handed its share over (``engine/machines.py``)."""
        self.crew = crew
        self.index, self.agents = index, agents
        self.ring: HashRing = HashRing(agents)
        # where each ring owner's links go: a local agent's index, or -1 - (its place in the global ring)
        self._routes = list(range(agents))
        senders = peers(index, agents)
        self.remote: Outbox | None = None
        self.members: list[Member] | None = None  # set by ``widen``
        self.node = node
        self.handed_to: dict[str, int] = {}  # hosts handed to their IP's machine: to this global agent there
        self.taken: set[str] = set()  # hosts handed to this agent by their owner on another machine
        # per handed host, the URLs this agent's sieve let through before it was handed: offered again,
        # past the sieve, if it takes the host back (``settle``). Only a takeover brings one back: adopted,
        # a machine keeps its places, and a ring that only grows moves IPs to the newcomer alone; so with
        # ``cluster.departure = "adopt"`` none is kept, or they would fill memory and checkpoints in vain
        self.handed_urls: dict[str, list[str]] = {}
        self.keeps_handed = crew.config.cluster.departure == "take_over"
        # hosts this agent gave up while its sieve remembers their URLs (a machine rejoined and owns them
        # now, by name or as their IP's): per host, the URLs its sieve let through that it did not fetch,
        # those leaving the sieve later included; queued again, past the sieve, if the host comes back to
        # it (that machine leaves again: ``settle``; or hands it on by its IP: ``_take``)
        self.given: dict[str, list[str]] = {}
        self.held: list[tuple[str, list[str], list[LinkContext] | None]] = []  # links of hosts not owned yet
        self.held_since = 0.0  # monotonic time the oldest held links came
        # pages known stored (the fetchers' skip set, which the agent shares): not handed on to a host's IP's
        # machine, whose skip set may not hold those another machine stored since its last ring change
        self.stored: set[int] = set()
        # per host it took over from others' archives (``engine/takeover.py``), the pages stored there: sent
        # with the host if it is handed on by its IP, into the receiver's skip set (``STORED``)
        self.stored_urls: dict[str, list[str]] = {}
        if members is not None:
            senders.append(BRIDGE)
            self.remote = Outbox(links.parent / "remote", index, [])  # the bridge polls these spools, no bell
            self.widen(members)
        self.senders = senders
        self.pinned = pinned_hosts(crew.config.credentials, agents)  # a credential's hosts go with it
        policy = crew.frontier.policy
        hooks = type(policy)  # a policy's hook is asked only when it overrides the default
        self.url_owner = policy.owner if hooks.owner is not CrawlPolicy.owner and agents > 1 else None
        talks = hooks.messages is not CrawlPolicy.messages and agents > 1
        self.mail_out = Outbox(links.parent / "policy", index, agents, bells=links) if talks else None
        self.mail_in = Inbox(links.parent / "policy", index, agents) if talks else None
        self.ticks_alone = hooks.tick is not CrawlPolicy.tick and agents == 1  # several agents tick in the exchange
        self._owners: dict[str, int] = {}
        if live is not None and node not in live:
            self.route_by(live)
        self.links = links
        several = agents > 1 or members is not None
        self.outbox = Outbox(links, index, agents, bells=links) if several else None
        self.inbox = Inbox(links, index, senders) if several else None
        self._bell: Doorbell | None = None  # opened by the exchange task, on its loop

    def owner(self, scheme_authority: str) -> int:
        if self.handed_to or self.taken:
            if scheme_authority in self.taken:
                return self.index
            to = self.handed_to.get(scheme_authority)
            if to is not None:
                return -1 - to
        return self._by_name(scheme_authority)

    def _by_name(self, scheme_authority: str) -> int:
        owner = self._owners.get(scheme_authority)
        if owner is None:
            if len(self._owners) > 1 << 20:
                self._owners.clear()
            host = host_of(scheme_authority)
            pinned = self.pinned.get(host)
            owner = self._owners[scheme_authority] = self._routes[self.ring.owner(host)] if pinned is None else pinned
        return owner

    def owner_of(self, url: str) -> int:
        """The agent of ``url``: the policy's if it says, else its host's."""
        who = self.url_owner(url) if self.url_owner is not None else None
        if who is None:
            slash = url.find("/", 8)
            who = self.owner(url if slash < 0 else url[:slash])
        return who

    def hand_off(self, vs: VisitState, ip: str) -> bool:
        """Hand the host of ``vs``, just resolved to ``ip``, to the agent that owns ``ip`` on the ring if
        that agent is on another machine (True: this agent never fetches it)."""
        authority = vs.scheme_authority
        stored = self.stored_urls.pop(authority, []) if self.stored_urls else []
        if not isinstance(self.ring, GlobalRing) or vs.entry is not None:
            return False  # one machine; or a host resolved again stays where it is crawled
        if authority in self.taken or host_of(authority) in self.pinned:
            return False
        to = self.ring.owner(ip)
        if self.ring.agents_list[to][0] == self.node:
            if self._by_name(authority) != self.index:  # no longer taken since a ring change (follow_ips): its IP's again
                self.taken.add(authority)
            return False
        vs.ip = ip  # kept with the purged visit state: where its hand-off goes follows the ring (follow_ips)
        urls = self.crew.frontier.distributor.hand_off(vs)
        self.crew.frontier.refused(vs, "handed_off_ip")
        self._hand(authority, to, urls)
        if stored:  # before any later link of the host, in the same spool
            self._send_theirs(stored, self._handed(STORED), None)
        return True

    def _hand(self, authority: str, to: int, urls: list[str]) -> None:
        """Hand the host ``authority`` to global agent ``to`` with its queued ``urls``; later links follow."""
        self.handed_to[authority] = to
        if self.keeps_handed:
            self.handed_urls[authority] = urls
        self._forward(urls)

    def follow_ips(self) -> int:
        """After the ring grew (a machine rejoined), while no fetch is in flight: every IP whose hash moved
        to another machine's agent leaves this agent whole, or the two machines would crawl it at once.
        Each host it crawls at such an IP (its own by name, or taken) is handed on to that agent as at
        its DNS answer: its queued URLs go there, later links and URLs leaving the sieve follow
        (``handed_to``; a host it had taken is relayed so); a host handed by it earlier goes to the IP's
        agent now; and a host taken but not resolved yet is no longer taken, so that its DNS answer
        decides (``hand_off``). A host pinned by ``[[credentials]]`` stays. Returns how many hosts it
        handed on."""
        assert isinstance(self.ring, GlobalRing)
        ring, frontier = self.ring, self.crew.frontier
        hosts = frontier.distributor.host_to_visit_state
        for authority in self.handed_to:
            ip = frontier.distributor.ip_of(authority)  # None: handed before a restart, where it went relays it
            if ip is not None and ring.agents_list[to := ring.owner(ip)][0] != self.node:
                self.handed_to[authority] = to
        moved = 0
        for vs in list(hosts.values()):
            authority = vs.scheme_authority
            if vs.phase is Phase.PURGED or host_of(authority) in self.pinned:
                continue
            if vs.entry is None or vs.ip is None:  # not resolved yet: its answer decides
                self.taken.discard(authority)
                continue
            to = ring.owner(vs.ip)
            if ring.agents_list[to][0] != self.node:
                self.taken.discard(authority)
                self._hand(authority, to, self._queued(vs, "handed_off_ip"))
                moved += 1
        self.taken = {a for a in self.taken if a in hosts}  # no visit state yet (URLs in the sieve): likewise
        return moved

    def _queued(self, vs: VisitState, reason: str) -> list[str]:
        """Purge ``vs``, returning its URLs (to retry, due, queued in memory and on disk) for where its host
        goes; those that leave the sieve later collect in the distributor's ``forward``."""
        frontier = self.crew.frontier
        retry = [vs.scheme_authority + vs.retry_path.decode()] if vs.retry_path is not None else []
        urls = [*retry, *frontier.distributor.hand_off(vs)]
        frontier.purge(vs, reason)
        return urls

    def forward_handed(self) -> None:
        """Send on the URLs of handed hosts that left the sieve meanwhile; keep those of hosts given up."""
        distributor = self.crew.frontier.distributor
        if distributor.forward:
            urls, distributor.forward = distributor.forward, []
            sent = []
            for url in urls:
                authority = split(url)[0]
                if authority in self.handed_to:
                    if self.keeps_handed:
                        self.handed_urls.setdefault(authority, []).append(url)
                    sent.append(url)
                else:
                    self.given.setdefault(authority, []).append(url)
            self._forward(sent)

    def give(self, vs: VisitState) -> None:
        """Purge the host of ``vs``, which another machine's agent owns now, keeping the URLs it had queued
        (and those that leave the sieve later) in case it comes back: the sieve will not let them through again."""
        self.given[vs.scheme_authority] = self._queued(vs, "handed_over")

    def _revive(self, authority: str) -> list[str]:
        """A host given up comes back to this agent: a URL of it makes a new visit state; the URLs to queue
        again past the sieve (the skip set drops those stored meanwhile)."""
        distributor = self.crew.frontier.distributor
        distributor.handed_off.discard(authority)
        distributor.drop_purged(authority)
        return self.given.pop(authority)

    def _forward(self, urls: list[str]) -> None:
        urls = [url for url in urls if fingerprint(url) not in self.stored] if self.stored else urls
        if urls:
            self._send_theirs(urls, self._handed(""), None)
            if self._bell is not None:
                self._bell.poke()

    def _handed(self, parent: str) -> str:
        """``parent`` marked as handed by this agent, on its ring (no URL has a space)."""
        return f"{HANDED}{','.join(self.live)} {parent}"

    def _handed_on(self, marked: str) -> tuple[bool, str | None]:
        """Of a parent marked handed: whether the sender was on this agent's ring, and the parent
        (``None``: the URL was queued before the hand-off)."""
        ring, _, parent = marked[len(HANDED):].partition(" ")
        return ring == ",".join(self.live), parent or None

    def _take(self, links: list[str]) -> None:
        """Take the hosts of ``links`` as handed to this agent. One it gave up earlier (its owner by
        name rejoined, and has now handed it back by its IP) starts afresh: its purged visit state
        would drop every URL, and its sieve those it let through before, queued again past it."""
        distributor = self.crew.frontier.distributor
        again = []
        for authority in {split(url)[0] for url in links} - self.taken:
            self.taken.add(authority)
            if authority in self.given:
                again += self._revive(authority)
            else:
                vs = distributor.host_to_visit_state.get(authority)
                if vs is not None and vs.phase is Phase.PURGED:
                    distributor.drop_purged(authority)
        self.crew.frontier.add_revisits(Revisit(url, 0.0) for url in again)

    def handed_state(self) -> dict[str, Any]:
        """What the checkpoint keeps of the hand-offs, and the links held: the inbox positions in the same
        checkpoint are past them, so a restart would read them no more (a newcomer killed, or adopted and
        handed back, before its ring took it in: the queued URLs of a host handed to it by its IP among them)."""
        return {"handed": self.handed_to, "taken": sorted(self.taken), "handed_urls": self.handed_urls,
                "given": self.given, "stored_urls": self.stored_urls,
                "held": [encode_batch(*batch).decode() for batch in self.held]}

    def restore_handed(self, state: dict[str, Any]) -> None:
        self.handed_to.update(state.get("handed", {}))
        self.given.update(state.get("given", {}))
        self.crew.frontier.distributor.handed_off.update([*self.handed_to, *self.given])
        self.taken.update(state.get("taken", ()))
        self.handed_urls.update(state.get("handed_urls", {}))
        self.stored_urls.update(state.get("stored_urls", {}))
        for payload in state.get("held", ()):  # routed at the ring the supervisor gives at the start
            self._hold(*decode_batch(payload.encode()))

    def handed_away(self, live: Sequence[str]) -> bool:
        """Whether this agent handed a host to a machine not among ``live``, or gave up one that comes
        back to it on the ring over ``live`` (other live machines may have crawled either meanwhile)."""
        assert self.members is not None
        agents = GlobalRing(self.members).agents_list
        ring = GlobalRing(self.members, live)
        me = ring.agents_list.index((self.node, self.index))
        return (any(agents[to][0] not in live for to in self.handed_to.values())
                or any(ring.owner(host_of(authority)) == me for authority in self.given))

    def settle(self, before: Sequence[str]) -> Settled:
        """The hand-offs after the ring changed from ``before`` to the live machines (``route_by``), while no
        fetch is in flight or the machines concerned are gone. Hosts this agent owned by name and no
        longer does are no longer handed by it: given up (``given``); those it only relays keep going
        where it relays them (``follow_ips``). It takes back the hosts it handed to a machine gone: they
        are new again, resolved and handed by the new ring's owner of their IP (or crawled here: its skip
        set, and that of every other survivor, holds the pages the machine gone stored); a hand-off to a
        live machine stands, also when its own machine rejoined (the ring is the one it handed them on,
        and ``follow_ips`` moves it if the IP moved). A host taken whose owner by name rejoined is given
        up unless its IP is still this agent's on the ring (that owner would hand it right back); one
        taken before this agent's own machine left stays if its IP is still this agent's (its crawler
        meanwhile hands it back: ``follow_ips``), else ``follow_ips`` hands it on. Hosts given up that
        it owns again (their machine left again) are revived."""
        assert isinstance(self.ring, GlobalRing) and self.members is not None
        distributor, agents = self.crew.frontier.distributor, self.ring.agents_list
        old, me = GlobalRing(self.members, before), (self.node, self.index)
        for authority in [a for a in self.handed_to if self._by_name(a) != self.index
                          and old.agents_list[old.owner(host_of(a))] == me]:
            del self.handed_to[authority]  # still in the distributor's handed_off: its URLs leaving the sieve are kept
            self.given[authority] = self.handed_urls.pop(authority, [])
        joined = set(self.live) - set(before)
        given_up = {a for a in self.taken if agents[self.ring.owner(host_of(a))][0] in joined
                    and not self._ip_mine(distributor.ip_of(a))}
        self.taken -= given_up
        back = [a for a, to in self.handed_to.items() if agents[to][0] not in self.live]
        urls = []
        for authority in back:
            del self.handed_to[authority]
            distributor.handed_off.discard(authority)
            distributor.drop_purged(authority)  # a URL of it makes a new one
            urls += self.handed_urls.pop(authority, [])
        revived = [a for a in self.given if a not in given_up and self.owner(a) == self.index]
        for authority in revived:
            urls += self._revive(authority)
        return Settled(back, urls, given_up, revived)

    def _ip_mine(self, ip: str | None) -> bool:
        """Whether ``ip`` (None: not resolved here) hashes to this agent on the ring."""
        return ip is not None and self._routes[self.ring.owner(ip)] == self.index

    def widen(self, members: Sequence[Member]) -> None:
        """Crawl over ``members``: the member list, or it with machines that joined appended (the others keep
        their places). Their agents get routes and spools; they own hosts once :meth:`route_by` names them live."""
        members = [(node, agents) for node, agents in members]
        assert self.members is None or members[:len(self.members)] == self.members, "members are only appended"
        self.members = members
        ring = self.ring = GlobalRing(members, self.live or None)
        self._routes = [i if n == self.node else -1 - g for g, (n, i) in enumerate(ring.agents_list)]
        assert self.remote is not None
        self.remote.open_to(g for g, (n, _) in enumerate(ring.agents_list) if n != self.node)

    def route_by(self, live: Sequence[str]) -> None:
        """Route by the ring over the ``live`` machines from now on."""
        assert self.members is not None
        self.ring = GlobalRing(self.members, live)
        self._owners.clear()

    @property
    def live(self) -> tuple[str, ...]:
        """The machines the ring is made of (none on one machine)."""
        return self.ring.live if isinstance(self.ring, GlobalRing) else ()

    def release_held(self) -> None:
        """Route again the links held back for hosts this agent did not own when they came."""
        held, self.held = self.held, []
        for parent, links, contexts in held:
            page: str | None = parent
            if parent.startswith(HANDED):
                same_ring, page = self._handed_on(parent)
                if same_ring:
                    links, contexts = self._pass_on(parent, links, contexts)
                    self._take(links)
                    self.crew.frontier.discover(links, page, contexts)
                    continue
                # handed on another ring: the owner by name on this agent's ring decides again
                page = page or ""  # routed, as a page's links are ("": no parent)
            self.discover(links, page, contexts)

    def mine(self, urls: Sequence[str]) -> list[str]:
        """The URLs this agent owns."""
        return [u for u in urls if self.owner_of(u) == self.index]

    def discover(self, links: Sequence[str], parent: str | None, contexts: Sequence[LinkContext] | None) -> None:
        """Links of this agent's hosts go to its frontier, the others to their owners' spools."""
        frontier = self.crew.frontier
        follow = self.crew.filters.follow
        if follow is not None:
            kept = [i for i, url in enumerate(links) if follow.accepts(url)]
            if len(kept) < len(links):
                frontier.drop("follow_filter", len(links) - len(kept))
                links = [links[i] for i in kept]
                contexts = [contexts[i] for i in kept] if contexts is not None else None
        if self.outbox is not None and parent is not None:
            links, contexts = self._send_theirs(links, parent, contexts)
            if self._bell is not None and self.pending:
                self._bell.poke()  # a sleeping exchange has a batch to write
        if links and frontier.discover(links, parent or None, contexts):
            self.crew.distributor_alarm.fire()

    def _send_theirs(
        self, links: Sequence[str], parent: str, contexts: Sequence[LinkContext] | None
    ) -> tuple[list[str], list[LinkContext] | None]:
        assert self.outbox is not None
        mine: list[str] = []
        my_contexts: list[LinkContext] | None = [] if contexts is not None else None
        theirs: dict[tuple[int, bool], tuple[list[str], list[LinkContext] | None]] = {}
        me, owner, by_policy, handed = self.index, self.owner, self.url_owner is not None, self.handed_to
        # the hot path, by host alone: an authority seen before is one look-up, without a call
        known = self._owners if not by_policy and not handed and not self.taken else {}
        for i, url in enumerate(links):
            if by_policy:
                who = self.owner_of(url)
            else:
                slash = url.find("/", 8)
                authority = url if slash < 0 else url[:slash]
                seen = known.get(authority)
                who = owner(authority) if seen is None else seen
            if who == me:
                mine.append(url)
                if my_contexts is not None and contexts is not None:
                    my_contexts.append(contexts[i])
            else:
                marked = who < 0 and bool(handed) and split(url)[0] in handed
                if marked and self.stored and not parent.startswith(HANDED) and fingerprint(url) in self.stored:
                    continue  # a link forwarded on arrival to a page stored already (``_forward`` filters its own)
                urls, their_contexts = theirs.setdefault((who, marked), ([], [] if contexts is not None else None))
                urls.append(url)
                if their_contexts is not None and contexts is not None:
                    their_contexts.append(contexts[i])
        for (who, marked), (urls, their_contexts) in theirs.items():
            if who >= 0:
                self.outbox.add(who, parent, urls, their_contexts)
            else:
                assert self.remote is not None
                self.remote.add(-1 - who, parent if not marked or parent.startswith(HANDED) else self._handed(parent),
                                urls, their_contexts)
        return mine, my_contexts

    async def exchange(self) -> None:
        """Send buffered links (and the policy's messages) to their owners and take in those sent here,
        until the agent stops.

        While links flow in either direction the task runs every ``EXCHANGE_PERIOD``, so each
        receiver gets one write per period, not one per page; after a period with none it sleeps
        until its bell rings. A policy that talks to other agents keeps the period: it has a timer."""
        assert self.outbox is not None and self.inbox is not None
        crew = self.crew
        # opened before the first read: a sender that rings before this finds no reader, and its
        # links are read below
        bell = self._bell = Doorbell(bell_path(self.links, self.index))
        talks = self.mail_out is not None
        try:
            while not crew.stopping:
                flowing = self.pending
                self.flush()
                received = False
                if self.held and time.monotonic() - self.held_since > crew.config.cluster.ttl:
                    self.release_held()
                for from_page, links, contexts in self.inbox.poll():
                    flowing = True
                    parent: str | None = from_page
                    if self.members is not None:
                        parent, links, contexts = self._hold_theirs(from_page, links, contexts)
                    if links:
                        received |= bool(crew.frontier.discover(links, parent or None, contexts))
                if self.mail_out is not None and self.mail_in is not None:
                    received |= self._mail(time.monotonic())
                if received:
                    crew.distributor_alarm.fire()
                if flowing or talks:
                    await asyncio.sleep(EXCHANGE_PERIOD)
                    bell.clear()  # what the rings announced is read next, rings after this wake the next wait
                else:
                    await bell.wait()
        finally:
            self._bell = None
            bell.close()

    def _hold_theirs(self, parent: str, links: list[str], contexts: list[LinkContext] | None
                     ) -> tuple[str | None, list[str], list[LinkContext] | None]:
        """The links this agent owns; those of hosts handed to another machine's agent sent on; the others
        (from a sender already on a newer ring) held."""
        me = self.index
        if parent.startswith(HANDED):  # the owner by name hands these hosts to this agent
            same_ring, page = self._handed_on(parent)
            if page == STORED:  # pages of them stored already: never fetched here, whatever the ring
                self.stored.update(fingerprint(url) for url in links)
                return None, [], None
            if same_ring:
                links, contexts = self._pass_on(parent, links, contexts)
                self._take(links)
                return page, links, contexts
            self._hold(parent, links, contexts)  # the sender's takeover may be ahead of this agent's
            return None, [], None
        links, contexts = self._pass_on(parent, links, contexts)
        owners = [self.owner_of(url) for url in links]
        if all(who == me for who in owners):
            return parent, links, contexts
        keep = [i for i, who in enumerate(owners) if who == me]
        rest = [i for i, who in enumerate(owners) if who != me]
        self._hold(parent, [links[i] for i in rest], [contexts[i] for i in rest] if contexts is not None else None)
        return parent, [links[i] for i in keep], [contexts[i] for i in keep] if contexts is not None else None

    def _pass_on(self, parent: str, links: list[str], contexts: list[LinkContext] | None
                 ) -> tuple[list[str], list[LinkContext] | None]:
        """Send the links of hosts this agent handed to their IP's agent there (those it had taken included:
        their owner by name still sends them here, ``follow_ips``); the others."""
        if not self.handed_to:
            return links, contexts
        handed = [split(url)[0] in self.handed_to for url in links]
        if any(handed):
            self._send_theirs([u for u, h in zip(links, handed) if h], parent,
                              [c for c, h in zip(contexts, handed) if h] if contexts is not None else None)
            links = [u for u, h in zip(links, handed) if not h]
            contexts = [c for c, h in zip(contexts, handed) if not h] if contexts is not None else None
        return links, contexts

    def _hold(self, parent: str, links: list[str], contexts: list[LinkContext] | None) -> None:
        if not self.held:
            self.held_since = time.monotonic()
        self.held.append((parent, links, contexts))

    async def tick(self) -> None:
        """A one-agent crawl's policy timer (with several agents, the exchange ticks it), until the agent stops."""
        crew = self.crew
        while not crew.stopping:
            revisits = list(crew.frontier.policy.tick(time.monotonic()))
            if revisits:
                crew.frontier.add_revisits(revisits)
                crew.distributor_alarm.fire()
            await asyncio.sleep(EXCHANGE_PERIOD)

    def _mail(self, now: float) -> bool:
        """Send the policy's messages, hand it those sent here and tick its timer; True if revisits came of it."""
        assert self.mail_out is not None and self.mail_in is not None
        policy = self.crew.frontier.policy
        for receiver, message in policy.messages(now):
            self.mail_out.send(receiver, message)
        self.mail_out.flush()
        revisits = [r for sender, message in self.mail_in.payloads() for r in policy.on_message(sender, message, now)]
        revisits += policy.tick(now)
        self.crew.frontier.add_revisits(revisits)
        return bool(revisits)

    # -- what the checkpoint, the status and the end-of-crawl check need -----------------------------

    @property
    def pending(self) -> bool:
        """Links buffered for another agent, not written yet."""
        return ((self.outbox is not None and self.outbox.pending) or (self.remote is not None and self.remote.pending)
                or bool(self.held))

    def flush(self) -> None:
        if self.outbox is not None:
            self.outbox.flush()
        if self.remote is not None:
            self.remote.flush()
        if self.mail_out is not None:
            self.mail_out.flush()

    def read_positions(self) -> dict[int, Position]:
        return self.inbox.positions() if self.inbox is not None else {}

    def committed(self, positions: dict[int, Position]) -> None:
        if self.inbox is not None:
            self.inbox.committed(positions)

    def mail_positions(self) -> dict[int, Position]:
        """Where the policy's messages have been read to (its state in the same checkpoint has read them)."""
        return self.mail_in.positions() if self.mail_in is not None else {}

    def resume_reading(self, positions: dict[int, Position], mail: dict[int, Position]) -> None:
        """Read the spools (links, the policy's messages) from a checkpoint's positions."""
        if self.inbox is not None:
            self.inbox = Inbox(self.links, self.index, self.senders, positions)
        if self.mail_in is not None:
            self.mail_in = Inbox(self.links.parent / "policy", self.index, self.agents, mail)

    def status(self) -> tuple[dict[str, list[int]], dict[str, list[int]]]:
        """(spool ends written, read positions), keyed by the other agent, for the supervisor's end check."""
        out = {str(k): list(v) for k, v in self.outbox.positions().items()} if self.outbox else {}
        read = {str(k): list(v) for k, v in self.inbox.positions().items()} if self.inbox else {}
        return out, read

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.close()
        if self.remote is not None:
            self.remote.close()
        if self.mail_out is not None:
            self.mail_out.close()

    @property
    def sent(self) -> int:
        return ((self.outbox.links_sent if self.outbox is not None else 0)
                + (self.remote.links_sent if self.remote is not None else 0))

    @property
    def received(self) -> int:
        return self.inbox.links_received if self.inbox is not None else 0
