"""``crawl fresh schedule``: an offline recrawl schedule of social-network users from their post history.

Reads the history CSV (``user_id,unix_ts``: every post before ``--start``) and the users CSV (a
``user_id`` column), runs a planner of :mod:`frontier.freshness.planners` over ``[start, end)``
under the rate limit (``--per-hour`` calls in each clock hour counted from ``--start``), and writes
``user_id,crawl_ts`` rows sorted by time. The loop is the planner contract's driver
(:mod:`frontier.freshness.planner`).

Our choices where the issue is silent:

- Offline, nothing is known after the start, so the planner runs with ``learn=False``: a crawl
  reports no posts, and that must not read as "the user went silent" (every Hash table would
  decay); the models stay as the history made them. ``--set learn=true`` is refused for that reason.
- Times are unix seconds or ISO 8601; an ISO time without an offset is UTC. Crawl times are
  written as unix seconds, exactly as planned (the organ pipe's are not whole seconds).
- A history post at or after ``--start``, or before ``--history-start``, is an error (the file is
  not what the command was told it is); a history user absent from the users CSV is ignored.
"""

from __future__ import annotations

import argparse
import csv
import datetime
import sys
from collections import defaultdict
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from frontier.freshness.planner import Planner

HOUR = 3600.0


def time_value(text: str) -> float:
    """A time argument: unix seconds, or ISO 8601 (UTC when it names no offset)."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be unix seconds or an ISO 8601 time, not {text!r}") from None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return moment.timestamp()


def positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be a whole number, 1 or more, not {text!r}")
    return value


def add_parser(commands: Any) -> None:
    """The ``fresh`` command group and its ``schedule`` subcommand, under ``crawl``'s subcommands."""
    fresh = commands.add_parser("fresh", help="freshness-driven recrawl of social-network users (Guo et al.)")
    sub = fresh.add_subparsers(dest="fresh_command", required=True, parser_class=type(fresh))
    schedule = sub.add_parser("schedule", help="plan when to crawl each user, offline, from their post history")
    schedule.add_argument("--history", type=Path, required=True, metavar="H.csv",
                          help="user_id,unix_ts of every post before --start (with that header)")
    schedule.add_argument("--users", type=Path, required=True, metavar="U.csv", help="CSV with a user_id column")
    schedule.add_argument("--history-start", type=time_value, required=True, metavar="T0",
                          help="when the history begins (unix seconds or ISO 8601)")
    schedule.add_argument("--start", type=time_value, required=True, metavar="S", help="first instant crawls may run")
    schedule.add_argument("--end", type=time_value, required=True, metavar="E", help="crawls run before this instant")
    schedule.add_argument("--per-crawl", type=positive_int, required=True, metavar="K", help="posts one call returns")
    schedule.add_argument("--per-hour", type=positive_int, required=True, metavar="C",
                          help="calls in each clock hour counted from --start")
    schedule.add_argument("--out", type=Path, required=True, metavar="schedule.csv", help="where the schedule goes")
    schedule.add_argument("--planner", choices=["paper", "poisson", "hash", "allocation"], default="paper",
                          help="paper (Poisson for classes 1-2, Hash for 3-4; default), poisson, hash, or allocation "
                               "(spends --set calls_per_day=N: freshness calls and full calls, half each by default)")
    schedule.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                          help="a planner parameter: hash.weight=0.7, hash.span_days=30, poisson.period_days=30, "
                               "calendar.utc_offset_hours=8, routing.hash_rate=1 (frontier/freshness/params.py)")


def plan(planner: Planner, users: list[str], history: dict[str, list[float]], start: float, end: float,
         per_hour: int) -> list[tuple[float, str]]:
    """The contract's driver loop; the crawls, in time order."""
    planner.begin(users, history, start, end)
    used: dict[int, int] = defaultdict(int)
    crawls: list[tuple[float, str]] = []
    while (t := planner.next_at()) is not None:
        window = max(0, int((t - start) // HOUR))
        while used[window] >= per_hour:
            window += 1
        t = max(t, start + window * HOUR)
        if t >= end:
            break
        for user in planner.take(t, per_hour - used[window]):
            used[window] += 1
            crawls.append((t, user))
            planner.crawled(user, t, [], False)
    return crawls


def schedule(args: argparse.Namespace) -> int:
    from frontier.freshness.files import InputError, read_history, read_users
    from frontier.freshness.params import PlannerParams, with_settings
    from frontier.freshness.planners import PLANNERS, FreshnessPlanner

    try:
        if not args.history_start <= args.start < args.end:
            raise InputError("the times must satisfy --history-start <= --start < --end")
        try:
            params = with_settings(PlannerParams(per_crawl=args.per_crawl, learn=False,
                                                 history_start=args.history_start), args.set)
        except ValueError as e:
            raise InputError(f"--set {e}") from None
        if params.learn:
            raise InputError("--set learn: an offline schedule learns nothing after --start; leave it false")
        users = read_users(args.users)
        history = read_history(args.history, args.history_start, args.start)
        try:
            planner = PLANNERS[args.planner](params)
        except ValueError as e:
            raise InputError(f"--set {e}") from None
    except InputError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 2
    crawls = plan(planner, users, history, args.start, args.end, args.per_hour)
    try:
        with args.out.open("w", newline="") as stream:
            writer = csv.writer(stream, lineterminator="\n")
            writer.writerow(["user_id", "crawl_ts"])
            writer.writerows((user, repr(t)) for t, user in crawls)
    except OSError as e:
        sys.stderr.write(f"crawl: error: {args.out}: cannot write it: {e.strerror}\n")
        return 2
    crawled = len({user for _, user in crawls})
    classes = ""
    if isinstance(planner, FreshnessPlanner):
        classes = "; users by class " + ", ".join(f"{c}: {n}" for c, n in planner.statistics().classes.items())
    sys.stderr.write(f"{len(crawls)} crawls of {crawled} of {len(users)} users ({args.planner} planner{classes})"
                     f" → {args.out}\n")
    return 0
