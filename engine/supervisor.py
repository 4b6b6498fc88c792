"""The parent process of ``crawl run``: one agent process per core, watched, restarted, added up.

The supervisor writes the crawl's manifest (``OUT/crawl.json``: the number of agents, the
configuration, the seeds), creates the machine-wide IP table (``engine/ip_table.py``) and
starts the agents (``python -m engine.agent_process``), each with a socket to it. Over that
socket every agent sends its status twice a second and takes commands (``stop``). The
supervisor

* **adds up** the agents' statuses into the crawl's progress, its timeline and, at the end,
  ``OUT/stats.json`` (each agent also writes its own ``OUT/agent-I/stats.json``);
* **detects the end** of the crawl: every agent idle and every link spool read to its end,
  twice in a row (an agent alone ends by itself);
* **forwards signals**: SIGTERM or SIGINT becomes a ``stop`` to every agent, which finishes its
  fetches, checkpoints and exits;
* **restarts an agent that dies** (killed, or crashed); it resumes from its own checkpoint
  while the others go on. An agent dying over and over (``MAX_RESTARTS`` within a minute) stops
  the crawl with an error, which systemd's ``Restart=on-failure`` then retries whole;
* **stops the crawl on a full disk**: an agent that finds no room (``store.errors.StoreFull``)
  says so and exits with :data:`EXIT_STORE_FULL`; it is not restarted (it would meet the full
  disk again), the others stop cleanly, ``stop_reason`` is ``store_full``, one line on stderr
  says where, and ``crawl run`` exits with :data:`EXIT_STORE_FULL` (``--resume`` continues once
  there is room). ``OUT/reserve`` keeps ``RESERVE_BYTES`` aside for the end: its room is given
  back to write ``stats.json`` on a full disk;
* **speaks systemd's notify protocol** (``engine/sdnotify.py``): READY, STATUS, WATCHDOG, STOPPING;
* **joins a crawl over several machines** with ``cluster.url`` (``engine/machines.py``): it waits
  for ``cluster.size`` machines, writes the members into the manifest (the agents build the ring
  over every machine's agents from them), runs the bridge that carries links to and from the
  other machines (``engine/bridge.py``), beats its entry with its quiet state and the positions of
  its spools to and from them, and ends the crawl when every machine is quiet and every spool
  taken in, not when its own agents are; a stop of one machine stops them all. A machine whose
  entry expired has left: a survivor adopts it, running its supervisor in its own tree until it
  comes back (``engine/adoption.py``), or, with ``cluster.departure = "take_over"``, the agents
  take its hosts over (``engine/takeover.py``); one that cannot
  put its entry for half the TTL stops (``cut off``), before the others take its hosts; one that
  left and comes back rejoins, after the others handed its hosts back; one that was never a member
  joins the crawl under way the same way, appended to the members. Each supervisor holds its
  folder's ``OUT/lock`` (``engine/folder_lock.py``);
* **serves the control API** (``engine/control.py``) when ``control.listen`` is set: it is the
  :class:`~engine.control.Controllable`, fanning each command out to the agents and answering
  once every agent has applied it. Paused state, added seeds and live settings are kept in
  the manifest and replayed to a restarted agent.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import os
import resource
import signal
import socket
import sys
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

import orjson

from engine.channel import EXIT_STORE_FULL, MANIFEST, sleep_on_grid
from engine.config import Config, describe
from engine.folder_lock import lock_folder
from engine.ip_table import SharedIpTable
from engine.progress import ProgressDisplay, add_point, sample
from engine.sdnotify import Notifier
from engine.stats import NOT_ADDED, Counters, cpu_seconds, rss_bytes, write_json
from engine.status import TOP_HOSTS, AgentStatus, add_up
from frontier.urls import canonicalize
from store.errors import StoreFull, free_space, preallocate

if TYPE_CHECKING:  # imported when a machine joins a crawl over several (they bring in nats), or the control API is on
    from engine.machines import Machines
    from engine.metrics import Exporter

RESERVE = "reserve"  # OUT/reserve: room set aside while the crawl runs, given back for stats.json on a full disk
RESERVE_BYTES = 1 << 20
# An agent is one core's worth of work (one process per core): a BLAS library's thread pool (numpy's
# OpenBLAS starts one thread per core at import; the sieve's numpy calls use none) would only
# oversubscribe the machine, and starting it cost each agent 0.01-0.1 CPU-s here. A value the user set is kept.
ONE_THREAD = ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS")
MAX_RESTARTS = 5  # within RESTART_WINDOW seconds, per agent
RESTART_WINDOW = 60.0
TICK = 0.5  # seconds between two looks at the agents' statuses
LOOK_AFTER = 0.05  # seconds after the agents' status lines (engine/channel.py: sleep_on_grid) the look comes
LAST_WORDS = 5.0  # seconds to read what an agent sent before it exited (it is at most a line or two)
WATCH = 10.0  # seconds the agents list their top hosts after GET /hosts asked (renewed halfway)


class CrawlFolderError(Exception):
    """The output folder holds another crawl, or one started with a different number of agents."""


def default_processes() -> int:
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def prepare_folder(out: Path, processes: int, resume: bool) -> tuple[int, bool]:
    """Check the output folder; returns (agents, resuming)."""
    manifest = out / MANIFEST
    if not manifest.exists():
        return processes or default_processes(), False
    if not resume:
        raise CrawlFolderError(f"{out} holds a crawl: add --resume to continue it, or choose another --out")
    agents = int(orjson.loads(manifest.read_bytes())["agents"])
    if processes and processes != agents:
        raise CrawlFolderError(f"the crawl in {out} runs {agents} agents; resume it with --processes {agents} (or none)")
    return agents, True


@dataclass
class AgentProcess:
    index: int
    process: asyncio.subprocess.Process | None = None
    writer: asyncio.StreamWriter | None = None
    status: AgentStatus | None = None
    fresh: int = 0  # statuses received since the supervisor last looked
    deaths: deque[float] = field(default_factory=deque)
    restarts: int = 0
    exited: asyncio.Event = field(default_factory=asyncio.Event)
    summary: dict[str, Any] | None = None  # sent by the agent as it exits (its stats.json may not fit on the disk)


class Supervisor:
    def __init__(self, config: Config, seeds: list[str], agents: int, *, resuming: bool,
                 notifier: Notifier | None = None, adopted_by: str = "") -> None:
        self.config = config
        self.seeds = seeds
        self.out = config.out_dir
        self.resuming = resuming
        self.notifier = notifier or Notifier()
        self.agents = [AgentProcess(i) for i in range(agents)]
        self.stopping = False
        self.stop_reason = ""
        self.failed = False
        self.folder_lock = -1  # OUT/lock's descriptor, passed to every agent: the folder is free once all are gone
        self.full: tuple[str, Path] | None = None  # who found no room, to write what
        self.timeline: list[dict[str, float]] = []
        self._quiet_ticks = 0
        self._ready_sent = False
        self.startup_seconds = 0.0
        self.paused = False
        self.command_seq = 0
        self.heard = asyncio.Event()  # set on every status line
        self.exporter: Exporter | None = None  # made with the control server, the one reader of metrics()
        self.display = ProgressDisplay(config.engine.progress, max_pages=config.engine.max_pages,
                                       max_seconds=config.engine.max_seconds)
        self._max_seconds_timer: asyncio.TimerHandle | None = None
        self.machines: Machines | None = None
        if config.cluster.url:
            from engine.machines import Machines

            self.machines = Machines(self, agents, adopted_by)
        self._watch_renew = 0.0  # monotonic: when GET /hosts next tells the agents to go on listing their hosts

    # -- lifecycle -----------------------------------------------------------------------

    async def run(self) -> dict[str, Any]:
        """Run the crawl to its end; returns the summary written to ``OUT/stats.json``."""
        self.out.mkdir(parents=True, exist_ok=True)
        if self.machines is not None:
            await self.machines.connect()  # takes the folder once the machine that adopted this one let it go
            await self.machines.join()
        elif (lock := lock_folder(self.out)) is None:
            raise CrawlFolderError(f"another process runs the crawl in {self.out}")
        else:
            self.folder_lock = lock
        try:
            self.keep_room()
            self.write_manifest()
            if len(self.agents) > 1:
                SharedIpTable.create(self.out / "ip-table")
        except StoreFull as e:  # no agent is started into a full disk
            self.note_full("the supervisor", e.path)
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.stop_crawl, f"signal {signal.Signals(sig).name}")
        self.started = time.monotonic()  # until every agent runs; then the crawl's clock starts
        self._cpu_at_start = cpu_seconds()
        self._children_cpu_at_start = cpu_seconds(resource.RUSAGE_CHILDREN)
        control = None
        if self.config.control.listen and not self.stopping:
            # imported here, not at the top: aiohttp's server and prometheus-client cost ~0.3 CPU-s at every start
            from engine.control import ControlServer, token_for
            from engine.metrics import Exporter

            self.exporter = Exporter(self.status)
            control = ControlServer(self.config.control.listen, token_for(self.config.control.token), self,
                                    allow_remote=self.config.control.allow_remote)
            await control.start()
            print(f"control API: {control.url}", file=sys.stderr, flush=True)
        watchers = [asyncio.create_task(self.keep(agent)) for agent in self.agents if not self.stopping]
        ticker = asyncio.create_task(self.tick_loop())
        machines = [asyncio.create_task(self.machines.run())] if self.machines is not None else []
        await asyncio.gather(*watchers)
        for task in machines:
            task.cancel()
        await asyncio.gather(*machines, return_exceptions=True)
        if self.machines is not None:
            await self.machines.close(self.stop_reason or self.agents_reason() or "stopped")
        if control is not None:
            await control.close()
        self.display.close()
        ticker.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await ticker
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.remove_signal_handler(sig)
        self.notifier.notify("STOPPING=1", f"STATUS=stopped: {self.stop_reason}")
        summary = self.summary()  # the free space it reports is the full disk's, before the reserve goes
        self.write_summary(summary)
        if "store_full" in summary:
            full = summary["store_full"]
            print(f"crawl: stopped: the store is full ({'?' if full['free_bytes'] is None else full['free_bytes']} "
                  f"bytes free on {full['mount']}): {full['who']} could not write {full['path']}; "
                  "make room, then run the same command with --resume", file=sys.stderr)
        return summary

    @property
    def exit_status(self) -> int:
        """What ``crawl run`` exits with: :data:`EXIT_STORE_FULL`, 1 if an agent kept failing, else 0."""
        return EXIT_STORE_FULL if self.full is not None else 1 if self.failed else 0

    def write_manifest(self) -> None:
        members = self.machines.manifest() if self.machines is not None else {}
        write_json(self.out / MANIFEST, {"version": 1, "agents": len(self.agents), "config": describe(self.config),
                                         "seeds": self.seeds, **members})

    def agents_reason(self) -> str:
        """Why the agents stopped by themselves (a lone agent checks ``engine.max_pages`` itself)."""
        return ", ".join(sorted({a.summary.get("stop_reason", "") for a in self.agents if a.summary} - {""}))

    def update_manifest(self) -> None:
        """Rewrite the manifest while the crawl runs; no room for it stops the crawl (``store_full``)."""
        try:
            self.write_manifest()
        except StoreFull as e:
            self.note_full("the supervisor", e.path)

    def keep_room(self) -> None:
        """Set ``RESERVE_BYTES`` aside in ``OUT/reserve`` (allocated for real), for :meth:`write_summary`."""
        path = self.out / RESERVE
        try:
            with open(path, "wb") as f:
                preallocate(f.fileno(), RESERVE_BYTES, path)
        except BaseException:
            path.unlink(missing_ok=True)
            raise

    def write_summary(self, summary: dict[str, Any]) -> None:
        """``OUT/stats.json``, on a full disk too: the reserve's room is given back for it, and if even
        that is too little, the summary goes without its timeline; failing that, the previous one stays."""
        path, reserve = self.out / "stats.json", self.out / RESERVE
        slim = {k: v for k, v in summary.items() if k != "timeline"}
        for data, release in ((summary, False), (summary, True), (slim, True)):
            if release:
                reserve.unlink(missing_ok=True)
            try:
                write_json(path, data)
                break
            except StoreFull:
                continue
        else:
            print(f"crawl: {path} not written: no room for it even in the reserve; the previous one (if any) stays",
                  file=sys.stderr)
        reserve.unlink(missing_ok=True)  # a crawl that ended needs none; the next start sets it aside again

    def note_full(self, who: str, path: Path) -> None:
        """``who`` (an agent, or the supervisor) found no room to write ``path``: stop the crawl with
        ``store_full``, whatever it was stopping for, and restart no agent."""
        if self.full is None:
            self.full = (who, path)
        self.stop_crawl("store_full")
        self.stop_reason = "store_full"

    def stop_crawl(self, reason: str) -> None:
        """Ask every agent to finish (idempotent; the first reason is kept)."""
        if self.stopping:
            return
        self.stopping, self.stop_reason = True, reason
        self.notifier.notify("STOPPING=1", f"STATUS=stopping: {reason}")
        for agent in self.agents:
            self.send(agent, {"cmd": "stop", "reason": reason})

    def tell(self, command: dict[str, Any]) -> None:
        """Send ``command`` to every agent, not waiting for it to be applied."""
        self.command_seq += 1
        for agent in self.agents:
            self.send(agent, {**command, "seq": self.command_seq})

    def send(self, agent: AgentProcess, command: dict[str, Any]) -> None:
        if agent.writer is not None and not agent.writer.is_closing():
            agent.writer.write(orjson.dumps(command) + b"\n")

    # -- one agent -------------------------------------------------------------------------

    async def keep(self, agent: AgentProcess) -> None:
        """Run agent ``agent.index`` until the crawl stops, restarting it when it dies."""
        fresh = True
        while True:
            code = await self.start_and_wait(agent, fresh)
            fresh = False
            if code == EXIT_STORE_FULL:  # restarted, it would meet the full disk again
                self.note_full(f"agent {agent.index}", self.out)
                return
            if self.stopping or code == 0:
                return
            now = time.monotonic()
            agent.deaths.append(now)
            while agent.deaths and agent.deaths[0] < now - RESTART_WINDOW:
                agent.deaths.popleft()
            print(f"crawl: agent {agent.index} died (exit status {code}); restarting it", file=sys.stderr)
            if len(agent.deaths) > MAX_RESTARTS:
                print(f"crawl: agent {agent.index} died {len(agent.deaths)} times in {RESTART_WINDOW:.0f} s; "
                      "stopping the crawl", file=sys.stderr)
                self.failed = True
                self.stop_crawl("agent failing")
                return
            agent.restarts += 1

    async def start_and_wait(self, agent: AgentProcess, fresh: bool) -> int:
        mine, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
        with theirs:
            args = [sys.executable, "-m", "engine.agent_process", str(self.out), str(agent.index), str(theirs.fileno())]
            if fresh:  # the IP table, with its page count, is new: count the pages of a resumed crawl
                args.append("--count-restored-pages")
            env = {**{name: "1" for name in ONE_THREAD}, **os.environ}
            agent.process = await asyncio.create_subprocess_exec(*args, pass_fds=(theirs.fileno(), self.folder_lock),
                                                                 env=env)
        reader, agent.writer = await asyncio.open_connection(sock=mine)
        if self.stopping:
            self.send(agent, {"cmd": "stop", "reason": self.stop_reason})
        elif self.paused:  # a restarted agent joins a paused crawl paused
            self.send(agent, {"cmd": "pause", "seq": self.command_seq})
        for command in self.machines.commands() if self.machines is not None else []:
            self.send(agent, {**command, "seq": self.command_seq})
        agent.summary = None
        listener = asyncio.create_task(self.listen(agent, reader))
        code = await agent.process.wait()
        # the lines the agent sent just before it exited (its summary); the socket ends with it, reset
        # if the agent was killed with lines of ours unread
        with contextlib.suppress(TimeoutError, ConnectionError, ValueError, orjson.JSONDecodeError):
            await asyncio.wait_for(listener, LAST_WORDS)
        agent.writer.close()
        agent.writer, agent.status = None, None
        return code

    async def listen(self, agent: AgentProcess, reader: asyncio.StreamReader) -> None:
        while line := await reader.readline():
            message = orjson.loads(line)
            if "status" in message:
                agent.status = AgentStatus.from_dict(message["status"])
                agent.fresh += 1
                self.heard.set()
            elif "store_full" in message:
                self.note_full(f"agent {agent.index}", Path(message["store_full"]["path"]))
            elif "summary" in message:
                agent.summary = message["summary"]

    # -- the periodic look -------------------------------------------------------------------

    async def tick_loop(self) -> None:
        last_sample = last_status = 0.0
        watchdog = self.notifier.watchdog_interval
        last_watchdog = 0.0
        while True:
            await sleep_on_grid(TICK, LOOK_AFTER)  # a sampling period, just after the agents' status lines
            now = time.monotonic()
            statuses = [a.status for a in self.agents]
            complete = all(s is not None for s in statuses)
            if complete:
                if not self._ready_sent:
                    self.crawling()
                self.check_end()
            # the timeline starts with the crawl, and skips the ticks when an agent is missing (restarted, or
            # gone at the end, when none may be left): its pages would drop out of the sum, then come back
            if complete and self._ready_sent and now - last_sample >= 1.0:
                last_sample = now
                add_point(self.timeline, self.sample(now))
                self.display.update(self.total(), now - self.started)
                if now - last_status >= 10.0:
                    last_status = now
                    line = self.timeline[-1]
                    self.notifier.notify(f"STATUS=pages {line['pages']:,.0f}, {line['bytes'] / 1e6:,.1f} MB, "
                                         f"hosts {line['hosts']:,.0f}, agents {len(self.agents)}")
            if watchdog is not None and now - last_watchdog >= watchdog:
                last_watchdog = now
                self.notifier.notify("WATCHDOG=1")

    def crawling(self) -> None:
        """Every agent runs: start the crawl's clock (engine.max_seconds counts from here) and say so."""
        self._ready_sent = True
        self.startup_seconds = time.monotonic() - self.started
        self.started = time.monotonic()
        self.schedule_max_seconds()
        self.notifier.notify("READY=1", f"STATUS=crawling with {len(self.agents)} agents")

    def schedule_max_seconds(self) -> None:
        if self._max_seconds_timer is not None:
            self._max_seconds_timer.cancel()
            self._max_seconds_timer = None
        if self.config.engine.max_seconds:
            self._max_seconds_timer = asyncio.get_running_loop().call_at(
                self.started + self.config.engine.max_seconds, self.stop_crawl, "max_seconds")

    def check_end(self) -> None:
        """Stop when every agent is idle and every spool read to its end, on two looks in a row."""
        if self.stopping:
            return
        statuses = [a.status for a in self.agents if a.status is not None]
        assert len(statuses) == len(self.agents)
        max_pages = self.config.engine.max_pages
        if max_pages and sum(s.pages for s in statuses) >= max_pages:
            self.stop_crawl("max_pages")
            return
        if not all(a.fresh for a in self.agents):
            return  # wait until every agent has spoken since the last look
        for agent in self.agents:
            agent.fresh = 0
        quiet = all(s.idle for s in statuses) and all(
            statuses[int(receiver)].links_in.get(str(sender)) == position
            for sender, s in enumerate(statuses)
            for receiver, position in s.links_out.items()
        )
        if self.machines is not None and self.machines.bridge is not None:  # the machines decide together
            self.machines.quiet = quiet and self.machines.bridge.drained({i: s.links_in for i, s in enumerate(statuses)})
            return
        self._quiet_ticks = self._quiet_ticks + 1 if quiet else 0
        if self._quiet_ticks >= 2:
            self.stop_crawl("done")

    def sample(self, now: float) -> dict[str, float]:
        """A point of the crawl's timeline: the agents added up, with the supervisor's own CPU and memory."""
        total = self.total()
        total = dataclasses.replace(total, cpu_seconds=total.cpu_seconds + cpu_seconds() - self._cpu_at_start,
                                    rss_bytes=total.rss_bytes + rss_bytes())
        return sample(total, now - self.started)

    def total(self) -> AgentStatus:
        """The agents that have spoken, added up."""
        return AgentStatus.add_up([a.status for a in self.agents if a.status is not None], paused=self.paused)

    # -- the control API (engine/control.py: Controllable) ------------------------------------

    def status(self) -> dict[str, Any]:
        """``GET /status``: the agents added up, and each one's own status; in a crawl over machines,
        ``machines``: every live machine's entry from the view the heartbeat keeps (at most a heartbeat
        old), so a request costs no round trip to the broker."""
        status = {**self.total().as_dict(), "agents": [a.status.as_dict() for a in self.agents if a.status is not None]}
        if self.machines is not None:
            from engine.cluster import machines

            status["machines"] = machines(self.machines.view, self.machines.beats, time.monotonic())
        return status

    def metrics(self) -> bytes:
        assert self.exporter is not None, "metrics() is the control server's, made with it"
        return self.exporter.render()

    async def command(self, command: dict[str, Any], until: Callable[[AgentStatus], bool] | None = None,
                      timeout: float = 30.0) -> None:
        """Send ``command`` to every agent; return once each has applied it (and meets ``until``),
        or after ``timeout`` (an agent being restarted gets the state from the manifest)."""
        self.command_seq += 1
        seq = self.command_seq
        for agent in self.agents:
            self.send(agent, {**command, "seq": seq})

        def applied(agent: AgentProcess) -> bool:
            s = agent.status
            return s is not None and s.command_seq >= seq and (until is None or until(s))

        deadline = time.monotonic() + timeout
        while not all(applied(a) for a in self.agents) and time.monotonic() < deadline:
            self.heard.clear()
            with contextlib.suppress(TimeoutError):
                async with asyncio.timeout(deadline - time.monotonic()):
                    await self.heard.wait()  # not wait_for, which may lose a cancellation (engine/machines.py)

    async def pause(self) -> None:
        self.paused = True
        await self.command({"cmd": "pause"}, until=lambda s: s.in_flight == 0)

    async def resume(self) -> None:
        self.paused = False
        await self.command({"cmd": "resume"})

    async def add_seeds(self, urls: list[str]) -> int:
        accepted = [u for u in (canonicalize(url, sort_query=self.config.urls.sort_query) for url in urls) if u is not None]
        if accepted:
            self.seeds += accepted
            self.update_manifest()  # a restarted or resumed agent finds them there
            await self.command({"cmd": "seeds", "urls": accepted})
        return len(accepted)

    async def patch_config(self, changes: dict[str, Any]) -> dict[str, Any]:
        values = changes  # checked by the server (engine/control.py: live_changes)
        for key, value in values.items():
            section, name = key.split(".")
            setattr(getattr(self.config, section), name, value)
        self.update_manifest()
        if "engine.max_seconds" in values and self._ready_sent:
            self.schedule_max_seconds()
        self.display.max_pages, self.display.max_seconds = self.config.engine.max_pages, self.config.engine.max_seconds
        await self.command({"cmd": "config", "changes": values})
        return values

    async def stop(self) -> None:
        self.stop_crawl("control API")

    async def top_hosts(self) -> list[dict[str, Any]]:
        """The hosts with the most pages over all agents (each host is one agent's). The agents list
        theirs in their status lines only for :data:`WATCH` seconds after being asked: the first
        request waits for the lists, later ones read the last status lines."""
        now = time.monotonic()
        if now >= self._watch_renew and not self.stopping:  # stopping agents may be gone: nobody to wait for
            self._watch_renew = now + WATCH / 2
            await self.command({"cmd": "watch", "seconds": WATCH}, timeout=5.0)
        rows = [{"host": host, "pages": pages, "queued": queued, "agent": agent.index}
                for agent in self.agents if agent.status is not None
                for host, pages, queued in agent.status.top_hosts]
        return sorted(rows, key=lambda row: -row["pages"])[:TOP_HOSTS]

    # -- the end -------------------------------------------------------------------------------

    def summary(self) -> dict[str, Any]:
        """The agents' own summaries added up, with the supervisor's clock and CPU."""
        parts = []
        for agent in self.agents:
            path = self.out / f"agent-{agent.index}" / "stats.json"
            if agent.summary is not None:
                parts.append(agent.summary)
            elif path.exists():
                parts.append(orjson.loads(path.read_bytes()))
        elapsed = time.monotonic() - self.started
        zeros = {**Counters().as_dict(), "hosts": 0}  # every counter, even when no agent ran (a full disk at start)
        total = add_up([{k: v for k, v in p.items() if k not in NOT_ADDED} for p in [zeros, *parts]])
        # The CPU a user pays for: every process of the crawl from its start to its exit (the supervisor's
        # imports, each agent's start-up and shutdown, restarted agents), not only the crawling time.
        cpu = cpu_seconds() + cpu_seconds(resource.RUSAGE_CHILDREN) - self._children_cpu_at_start
        if self.machines is not None:  # the machines it ran, adopted, count theirs
            cpu -= self.machines.adopted_cpu
        pages = total.get("pages", 0)
        reasons = sorted({p.get("stop_reason", "") for p in parts} - {""})
        return {
            **total,
            "stop_reason": self.stop_reason or ", ".join(reasons),
            "elapsed_seconds": elapsed,
            "cpu_seconds": cpu,
            "pages_per_second": pages / elapsed if elapsed else 0.0,
            "pages_per_cpu_second": pages / cpu if cpu else 0.0,
            "rss_bytes": total.get("rss_bytes", 0) + rss_bytes(),
            "ips": self.ips(total.get("ips", 0)),
            "processes": len(self.agents),
            "startup_seconds": self.startup_seconds,
            "restarts": sum(a.restarts for a in self.agents),
            **({"cluster": self.machines.report()} if self.machines is not None and self.machines.bridge else {}),
            **({"store_full": self.full_report()} if self.full is not None else {}),
            "agents": [{k: v for k, v in p.items() if k not in ("timeline", "config")} for p in parts],
            "config": describe(self.config, redact=True),
            "timeline": self.timeline,
        }

    def full_report(self) -> dict[str, Any]:
        """``stats.json``'s ``store_full``: who found no room, to write what, and the free space there."""
        assert self.full is not None
        who, path = self.full
        mount, free = free_space(path)
        return {"who": who, "path": str(path), "mount": str(mount), "free_bytes": free}

    def ips(self, agents_ips: int) -> int:
        """IPs crawled from: agents that share an IP each count it, the machine-wide table once."""
        table = self.out / "ip-table"
        return SharedIpTable.count_ips(table) if len(self.agents) > 1 and table.exists() else agents_ips


def supervise(config: Config, seeds: list[str], agents: int, *, resuming: bool,
              adopted_by: str = "") -> tuple[dict[str, Any], int]:
    """Run a whole crawl from this process; returns (summary, exit status: :attr:`Supervisor.exit_status`).
    ``adopted_by``: the machine that runs this one, gone, in its process tree (``engine/adoption.py``)."""
    import uvloop

    async def main() -> tuple[dict[str, Any], int]:
        supervisor = Supervisor(config, seeds, agents, resuming=resuming, adopted_by=adopted_by)
        summary = await supervisor.run()
        return summary, supervisor.exit_status

    return uvloop.run(main())
