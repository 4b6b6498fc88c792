"""Weak scaling and balance of the recrawl over several agents (issue 15, digest §4.3–4.5, E-6, E-7).

For each number of agents M of ``--agents``, a population of M × ``--users-per-agent`` users
(``bench/invitro/posting.py``, one seed) is recrawled for ``--days`` by the paper's planner with M
credentials, each ``--per-hour`` calls an hour, in both architectures of
``bench/freshness/agents.py``: distributed (the position split, a planner per agent) and
centralized (one planner, shortest to-do list). It reports, per M and architecture, messages
collected, crawls and freshness, the speed-up messages(M) ÷ messages(1) and the workload gap
(max − min) ÷ mean of the agents' calls and of their messages, and the digest's checks:

- **E-6**: messages(M) ÷ messages(1) ≥ 0.9 · M (paper 0.93–1.06 · M);
- **E-7**: the centralized calls gap ≤ the distributed one in most M > 1 (paper: 3 of 4).

    python -m bench.freshness_scaling                               # M = 1, 2, 4, 8, 16; 2,000 users each
    python -m bench.freshness_scaling --agents 1,2 --users-per-agent 200 --days 14 --out /tmp/scaling
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import Any

import orjson

from bench.freshness.agents import ARCHITECTURES, simulate_agents, spread
from bench.freshness.metrics import measure
from bench.freshness.simulator import Limits
from bench.freshness.trace import Trace
from bench.freshness_eval import START
from bench.invitro.posting import DAY, Population, PostingParams
from frontier.freshness.params import PlannerParams, PoissonParams
from frontier.freshness.planners import paper_planner
from frontier.markdown_table import markdown_table


def run(agents: int, args: argparse.Namespace) -> dict[str, Any]:
    """Both architectures with ``agents`` credentials over one population of their users."""
    end = START + args.days * DAY
    population = Population(PostingParams(users=agents * args.users_per_agent, seed=args.seed))
    trace = Trace.from_population(population, START - args.warmup_days * DAY, end)
    limits = Limits(args.per_crawl, args.per_hour)
    params = PlannerParams(per_crawl=args.per_crawl, poisson=PoissonParams(period_days=30.0))
    rows: dict[str, Any] = {}
    for architecture in ARCHITECTURES:
        began = time.perf_counter()
        result = simulate_agents(lambda: paper_planner(params), trace, START, end, limits, agents, architecture,
                                 args.seed)
        overall, _ = measure(result.run)
        calls, messages = result.calls_by_agent(), result.messages_by_agent()
        rows[architecture] = {"overall": overall.as_dict(), "calls_by_agent": calls, "messages_by_agent": messages,
                              "calls_gap": spread(calls), "messages_gap": spread(messages),
                              "seconds": time.perf_counter() - began}
        print(f"M={agents} {architecture}: {overall.collected:,} msgs, {overall.crawls:,} crawls, fresh "
              f"{overall.freshness:.3f}, calls gap {rows[architecture]['calls_gap']:.2%}", flush=True)
    return {"agents": agents, "users": len(trace.users), "architectures": rows}


def checks(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """E-6 per architecture and M, and E-7 over the M above one."""
    one = {a: runs[0]["architectures"][a]["overall"]["collected"] for a in ARCHITECTURES}
    for r in runs:
        for a in ARCHITECTURES:
            row = r["architectures"][a]
            row["speedup"] = row["overall"]["collected"] / one[a]
            row["e6"] = bool(row["speedup"] >= 0.9 * r["agents"] / runs[0]["agents"])
    several = [r for r in runs if r["agents"] > 1]
    e7 = [r["architectures"]["centralized"]["calls_gap"] <= r["architectures"]["distributed"]["calls_gap"]
          for r in several]
    return {"e6": all(r["architectures"][a]["e6"] for r in runs for a in ARCHITECTURES),
            "e7_rows": sum(e7), "e7_of": len(e7), "e7": sum(e7) * 2 > len(e7)}


def markdown(result: dict[str, Any]) -> list[str]:
    p = result["parameters"]
    lines = [f"# Recrawl over several agents ({p['users_per_agent']:,} users per agent, {p['days']} days, "
             f"{p['per_hour']} calls per hour per agent)", ""]
    rows = [[str(r["agents"]), a, f"{row['overall']['collected']:,}", f"{row['overall']['crawls']:,}",
             f"{row['overall']['freshness']:.3f}", f"{row['speedup']:.3f}", "yes" if row["e6"] else "no",
             f"{row['calls_gap']:.2%}", f"{row['messages_gap']:.2%}"]
            for r in result["runs"] for a, row in r["architectures"].items()]
    lines += markdown_table(["M", "architecture", "messages", "crawls", "freshness", "speed-up", "E-6",
                             "calls gap", "messages gap"], rows)
    c = result["checks"]
    lines += ["", f"E-6 (speed-up ≥ 0.9·M everywhere): {'met' if c['e6'] else 'not met'}; "
              f"E-7 (centralized calls gap ≤ distributed): {c['e7_rows']} of {c['e7_of']} rows, "
              f"{'met' if c['e7'] else 'not met'}."]
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench.freshness_scaling", description=__doc__.split("\n\n")[0])
    parser.add_argument("--agents", default="1,2,4,8,16", help="numbers of agents, comma-separated")
    parser.add_argument("--users-per-agent", type=int, default=2000)
    parser.add_argument("--days", type=int, default=61)
    parser.add_argument("--warmup-days", type=int, default=14)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--per-crawl", type=int, default=100)
    parser.add_argument("--per-hour", type=int, default=150, help="calls per clock hour of each agent's credential")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("freshness_scaling"),
                        help="writes OUT.json and OUT.md")
    args = parser.parse_args(argv)
    try:
        args.agents = sorted({int(x) for x in args.agents.split(",")})
    except ValueError:
        parser.error(f"--agents: a comma-separated list of integers, got {args.agents!r}")
    if args.agents[0] < 1:
        parser.error("--agents: every number must be >= 1")
    for key in ("users_per_agent", "days", "per_crawl", "per_hour"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}: must be >= 1, got {getattr(args, key)}")
    if args.warmup_days < 14:
        parser.error(f"--warmup-days: the routing reads 14 days of history, got {args.warmup_days}")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    runs = [run(m, args) for m in args.agents]
    result = {"parameters": {k: v for k, v in vars(args).items() if k != "out"}, "runs": runs, "checks": checks(runs)}
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    out.with_suffix(".md").write_text("\n".join(markdown(result)) + "\n")
    print("\n".join(markdown(result)[2:]))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
