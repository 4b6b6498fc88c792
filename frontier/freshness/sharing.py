"""A live recrawl's users shared out over the agents of a crawl (digest §4.4–4.5), as pure state.

The distributed architecture: each agent owns some users, plans only those, and fetches them with
its own credential. What the agents must agree on, and how:

* **the position split** (:func:`position_split`): every agent computes it alone from the same
  model folder (users and history), so all start with the same owners and exchange nothing.
  Users are routed to Poisson or Hash from their history as the planner would route them then;
  Poisson users go round-robin over the organ pipe of their rates, Hash users greedily to the
  agent with the fewest predicted calls (:func:`~frontier.freshness.architectures.initial_owners`);
* **quota-based moves**, once per *round* (``round_seconds`` of the site's clock, a planning day
  by default): each agent sends the others its load (the calls its users are predicted to need
  in the next day) in a :class:`Load` message. Once an agent has every load of a round, it knows
  what every agent knows, so all compute the same :func:`spare_shares` (which overloaded agent
  may send how many calls to which agent with calls to spare); each overloaded agent then picks
  its own users to send (:meth:`~frontier.freshness.architectures.DistributedOwnership.rebalance`
  over its users, the other agents' quotas being its shares of their spare calls);
* **a move** happens at the moved user's next crawl: the old owner fetches it once more (it had
  that crawl planned), stops planning it, and sends every other agent a :class:`Move` (the new
  owner's carries the user's state: its listing, newest post, recent posts and that crawl's
  time), so a user is planned by at most one agent at any time and never lost; between the
  send and the receipt it is planned by none. Every agent applies moves in the order of each
  user's ``epoch`` (its count of moves), so a message read twice (after a resume) does nothing.

The quota of an agent is its credential's calls a day when the crawl says it, else the mean load
(moves then even out the agents' predicted calls). Pure: no I/O, no clock; messages are bytes.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import orjson

from frontier.freshness.architectures import DistributedOwnership, initial_owners
from frontier.freshness.calendar import DAY
from frontier.freshness.poisson import organ_pipe
from frontier.freshness.routing import RoutingParams, classify


def position_split(users: Sequence[str], history: Mapping[str, Sequence[float]], agents: int,
                   routing: RoutingParams, threshold: float) -> dict[str, int]:
    """Each user's first owner, from the history alone (the same on every agent).

    A user's rate is its posts per day over the ``routing.window_days`` before the history's last
    post; :func:`~frontier.freshness.routing.classify` routes it; a Hash user is predicted to need
    ``rate / threshold`` calls a day."""
    last = max((times[-1] for times in history.values() if len(times)), default=0.0)
    window = routing.window_days
    daily: dict[str, list[int]] = {}
    for user in users:
        counts = [0] * window
        for t in history.get(user, ()):
            back = math.floor((last - t) / DAY)
            if back < window:
                counts[window - 1 - back] += 1
        daily[user] = counts
    rate = {u: sum(daily[u]) / window for u in users}
    hashed = {u for u in users if classify(daily[u], None, routing).uses_hash}
    poisson = [u for u in users if u not in hashed]
    ascending = sorted(range(len(poisson)), key=lambda i: rate[poisson[i]])
    pipe = [poisson[i] for i in organ_pipe(ascending)]
    return initial_owners(pipe, {u: rate[u] / threshold for u in users if u in hashed}, agents)


def spare_shares(loads: Sequence[float], quotas: Sequence[float]) -> list[list[float]]:
    """``shares[s][a]``: the calls overloaded agent ``s`` may move to agent ``a``. The spare calls of
    the agents under their quota go to the overloaded ones in agent order, the most spare first."""
    agents = len(loads)
    spare = [max(0.0, quotas[a] - loads[a]) for a in range(agents)]
    shares = [[0.0] * agents for _ in range(agents)]
    for source in range(agents):
        excess = loads[source] - quotas[source]
        for target in sorted(range(agents), key=lambda a: (-spare[a], a)):
            if excess <= 0 or spare[target] <= 0:
                break
            given = min(excess, spare[target])
            shares[source][target] = given
            spare[target] -= given
            excess -= given
    return shares


@dataclass(frozen=True, slots=True)
class Handover:
    """What a moved user's new owner needs to plan it: its listing as fetched, its newest post, the
    posts its old owner saw lately (site seconds, ascending) and when the last crawl was."""

    url: str
    newest: float | None
    posts: list[float]
    crawled_at: float
    overflow: bool
    offset: float
    """the old owner's site time − time scale × crawl time (the agents of a crawl share one
    monotonic clock): a new owner that has fetched nothing yet takes it as its own"""


@dataclass(frozen=True, slots=True)
class Load:
    round: int
    calls: float


@dataclass(frozen=True, slots=True)
class Move:
    user: str
    target: int
    epoch: int
    handover: Handover | None = None  # only in the message to the target


def encode(message: Load | Move) -> bytes:
    if isinstance(message, Load):
        return orjson.dumps({"load": [message.round, message.calls]})
    h = message.handover
    state = None if h is None else [h.url, h.newest, h.posts, h.crawled_at, h.overflow, h.offset]
    return orjson.dumps({"move": [message.user, message.target, message.epoch, state]})


def decode(data: bytes) -> Load | Move:
    """A message :func:`encode` made; ValueError for anything else."""
    try:
        body = orjson.loads(data)
        if "load" in body:
            number, calls = body["load"]
            return Load(int(number), float(calls))
        user, target, epoch, state = body["move"]
        handover = None if state is None else Handover(
            str(state[0]), None if state[1] is None else float(state[1]), [float(t) for t in state[2]],
            float(state[3]), bool(state[4]), float(state[5]))
        return Move(str(user), int(target), int(epoch), handover)
    except (orjson.JSONDecodeError, KeyError, TypeError, ValueError, IndexError) as e:
        raise ValueError(f"not a sharing message: {data[:80]!r} ({e})") from None


@dataclass
class Sharing:
    """Agent ``me``'s view of who owns each user, its round of loads, and its messages to send.

    Invariant: ``owner`` maps every user to one agent; a user this agent owns is planned here
    unless it has been handed over (then ``owner`` names the new owner)."""

    me: int
    agents: int
    owner: dict[str, int]
    quota: float | None = None
    """each agent's calls a day (None: the mean load)"""
    epoch: dict[str, int] = field(default_factory=dict)
    leaving: dict[str, int] = field(default_factory=dict)
    """users chosen to move, each to its new owner, handed over at their next crawl"""
    loads: dict[int, dict[int, float]] = field(default_factory=dict)
    round: int = -1
    """the last round this agent sent its load for"""
    asked: int = -1
    """the latest round another agent sent its load for (an agent behind starts it too)"""
    due: dict[str, float] = field(default_factory=dict)
    """this agent's users' calls a day, as sent in the last round"""
    outbox: list[tuple[int, bytes]] = field(default_factory=list)
    moved_in: int = 0
    moved_out: int = 0

    def owns(self, user: str) -> bool:
        return self.owner.get(user) == self.me

    def mine(self) -> list[str]:
        return [u for u, a in self.owner.items() if a == self.me]

    def start_round(self, number: int, calls_due: Mapping[str, float]) -> None:
        """Round ``number`` begins here: send the others this agent's load, ``calls_due`` of its users
        (those leaving left out: they are as good as gone)."""
        self.round = number
        self.due = dict(calls_due)
        load = sum(calls_due.values())
        self.loads.setdefault(number, {})[self.me] = load
        self.outbox += [(a, encode(Load(number, load))) for a in range(self.agents) if a != self.me]
        self._decide(number)

    def receive(self, sender: int, data: bytes) -> Move | None:
        """Take in a message; returns the move of a user to this agent, with its state (plan it from now on)."""
        message = decode(data)
        if isinstance(message, Load):
            self.loads.setdefault(message.round, {})[sender] = message.calls
            self.asked = max(self.asked, message.round)
            self._decide(message.round)
            return None
        if message.epoch <= self.epoch.get(message.user, 0):
            return None  # read before (a resume reads the spools again)
        self.epoch[message.user] = message.epoch
        self.owner[message.user] = message.target
        self.leaving.pop(message.user, None)
        if message.target != self.me or message.handover is None:
            return None
        self.moved_in += 1
        return message

    def hand_over(self, user: str, state: Handover) -> bool:
        """``user`` was crawled here: if it is leaving, it goes to its new owner now (True)."""
        target = self.leaving.pop(user, None)
        if target is None or not self.owns(user):
            return False
        epoch = self.epoch[user] = self.epoch.get(user, 0) + 1
        self.owner[user] = target
        self.moved_out += 1
        self.outbox += [(a, encode(Move(user, target, epoch, state if a == target else None)))
                        for a in range(self.agents) if a != self.me]
        return True

    def take_messages(self) -> list[tuple[int, bytes]]:
        out, self.outbox = self.outbox, []
        return out

    def _decide(self, number: int) -> None:
        """With every agent's load of round ``number`` (and this agent's own), choose the users to move."""
        loads = self.loads.get(number, {})
        if number != self.round or len(loads) < self.agents:
            return
        for old in [r for r in self.loads if r <= number]:
            del self.loads[old]  # a round is decided once; older ones never will be
        figures = [loads[a] for a in range(self.agents)]
        quotas = [self.quota if self.quota is not None else sum(figures) / self.agents] * self.agents
        shares = spare_shares(figures, quotas)[self.me]
        local = [quotas[self.me] if a == self.me else shares[a] for a in range(self.agents)]
        mine = {u: calls for u, calls in self.due.items() if self.owns(u) and u not in self.leaving}
        ownership = DistributedOwnership(dict.fromkeys(mine, self.me), self.agents)
        for move in ownership.rebalance(mine, local):
            self.leaving[move.user] = move.target
