"""The centralized architecture of a live recrawl over agents (digest §4.3, Fig. 9), as pure state.

Agent 0 is the server: it alone plans every user. Each crawl that falls due goes, at that moment,
to the agent with the shortest to-do list (:class:`~frontier.freshness.architectures.
CentralizedDispatcher`, ties broken at random, seeded), as a :class:`Dispatch`; the agent (the
server too, for its own share) fetches the user's listing with its own credential and sends the
answer back as a :class:`Report`: the post times the answer listed, the site's clock, and the
agent's clock offset. The server judges which posts are new (it alone knows each user's newest)
and plans the next crawl. A user's first crawl goes to the agent the position split gives (the
listings are links, routed before any plan exists); its report goes to the server all the same.

The to-do list of an agent is its crawls dispatched and not yet reported, so an agent whose
credential runs dry gets fewer: the granularity is one crawl. Pure: no I/O, no clock.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

import orjson

from frontier.freshness.architectures import CentralizedDispatcher

SERVER = 0


@dataclass(frozen=True, slots=True)
class Report:
    """An agent fetched ``user``'s listing ``url``: ``kind`` is ``ok`` (``times`` are the posts the
    answer listed, site seconds), ``not_modified``, ``unreadable``, ``failed`` or ``status_N``."""

    user: str
    url: str
    site_now: float
    times: list[float]
    kind: str
    offset: float
    """the agent's site time − time scale × crawl time (the agents share one monotonic clock)"""


@dataclass(frozen=True, slots=True)
class Dispatch:
    """Fetch ``user``'s listing ``url`` now."""

    user: str
    url: str


def encode(message: Report | Dispatch) -> bytes:
    if isinstance(message, Dispatch):
        return orjson.dumps({"crawl": [message.user, message.url]})
    m = message
    return orjson.dumps({"report": [m.user, m.url, m.site_now, m.times, m.kind, m.offset]})


def decode(data: bytes) -> Report | Dispatch:
    """A message :func:`encode` made; ValueError for anything else."""
    try:
        body = orjson.loads(data)
        if "crawl" in body:
            user, url = body["crawl"]
            return Dispatch(str(user), str(url))
        user, url, site_now, times, kind, offset = body["report"]
        return Report(str(user), str(url), float(site_now), [float(t) for t in times], str(kind), float(offset))
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError) as e:
        raise ValueError(f"not a centralized recrawl's message: {data[:80]!r} ({e})") from None


@dataclass
class Central:
    """Agent ``me``'s part: on the server, the dispatcher and which agent each dispatched user went to."""

    me: int
    agents: int
    first: dict[str, int]
    """each user's agent for its first crawl (the position split)"""
    seed: int = 0
    dispatcher: CentralizedDispatcher | None = None
    assigned: dict[str, int] = field(default_factory=dict)
    dispatched: Counter[int] = field(default_factory=Counter)
    outbox: list[tuple[int, bytes]] = field(default_factory=list)

    def __post_init__(self) -> None:
        if self.me == SERVER and self.dispatcher is None:
            self.dispatcher = CentralizedDispatcher(self.agents, self.seed)

    @property
    def serves(self) -> bool:
        return self.dispatcher is not None

    def dispatch(self, user: str, url: str) -> int:
        """The agent that crawls ``user`` now (its to-do list grows; a remote one is sent the task)."""
        assert self.dispatcher is not None
        agent = self.dispatcher.dispatch()
        self.assigned[user] = agent
        self.dispatched[agent] += 1
        if agent != self.me:
            self.outbox.append((agent, encode(Dispatch(user, url))))
        return agent

    def reported(self, user: str, sender: int) -> None:
        """``sender`` reported a crawl of ``user``: one less on its list, if the server had sent it."""
        assert self.dispatcher is not None
        if self.assigned.get(user) == sender:
            del self.assigned[user]
            self.dispatcher.done(sender)

    def report(self, report: Report) -> None:
        """Send ``report`` to the server (an agent other than the server)."""
        self.outbox.append((SERVER, encode(report)))

    def take_messages(self) -> list[tuple[int, bytes]]:
        out, self.outbox = self.outbox, []
        return out
