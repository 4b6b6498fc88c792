"""The control API's commands, as one agent applies them: pause, resume, new seeds, live settings, watch;
and, in a crawl over several machines, the ring of the machines still live (``engine/takeover.py``).

The supervisor fans each command out to every agent (``engine/channel.py``); the keys a live
change may touch are ``engine/control.py: LIVE_KEYS``, already checked there. Writes the
configuration, the crew's filters and run flag, the frontier's delays and schedule filter
(``Frontier.set_delays``, ``Frontier.schedule``) and the number of fetchers; nothing else.
``watch`` (the dashboard is open) only notes until when the agent's status lines carry its top
hosts (``Agent.status``), a walk over its hosts that nobody pays for when nobody looks.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from typing import Any

from engine.crew import Crew
from engine.fetching import Fetchers
from engine.routing import LinkRouter
from engine.status import TOP_HOSTS
from frontier.filters import PhaseFilters


class Steering:
    """Applies commands to one agent."""

    def __init__(self, crew: Crew, fetchers: Fetchers, router: LinkRouter,
                 ring: Callable[[list[str], list[str]], None] | None = None) -> None:
        self.crew = crew
        self.fetchers = fetchers
        self.router = router
        self.ring = ring  # machines left or rejoined a crawl over several: the live machines' ring (Takeovers.ring)
        self.watched_until = 0.0  # monotonic; the status carries the top hosts until then

    def top_hosts(self) -> Sequence[tuple[str, int, int]]:
        """The agent's hosts with the most pages while watched (``Agent.status``), else none."""
        return self.crew.frontier.distributor.top_hosts(TOP_HOSTS) if time.monotonic() < self.watched_until else ()

    def obey(self, command: dict[str, Any]) -> None:
        crew = self.crew
        cmd = command["cmd"]
        if cmd == "pause":
            crew.running.clear()
        elif cmd == "resume":
            crew.running.set()
        elif cmd == "seeds":
            mine = self.router.mine(command["urls"])
            if mine and crew.frontier.discover(mine):
                crew.distributor_alarm.fire()
        elif cmd == "config":
            self.reconfigure(command["changes"])
        elif cmd == "ring" and self.ring is not None:
            if "members" in command:  # a machine joined: its agents get places before the ring names it live
                self.router.widen(command["members"])
            self.ring(command["live"], command.get("sources", []))
        elif cmd == "watch":
            self.watched_until = time.monotonic() + float(command["seconds"])

    def reconfigure(self, changes: dict[str, Any]) -> None:
        crew = self.crew
        for key, value in changes.items():
            section, name = key.split(".")
            setattr(getattr(crew.config, section), name, value)
        politeness = crew.config.politeness
        if "politeness.host_delay" in changes:  # applies from each host's next fetch on
            crew.frontier.set_delays(host_delay=politeness.host_delay)
        if "politeness.ip_delay" in changes:
            crew.frontier.set_delays(ip_delay=politeness.ip_delay)
        if "engine.fetchers" in changes:
            self.fetchers.resize(crew.config.engine.fetchers)
        if any(key.startswith("filters.") for key in changes):
            crew.filters = PhaseFilters.from_config(crew.config.filters)
            crew.frontier.schedule = crew.filters.schedule.accepts if crew.filters.schedule else None
        crew.todo_alarm.fire()
