"""The freshness evaluation (issue 15, digest §5.1-5.2, §6.4): recrawl planners at equal crawl budgets.

For each generated population (``--seeds``: the first is the seed the project tunes on, the
others are populations it never saw), and each replayed ``--trace`` CSV, this builds the ground truth of a ``--days`` period after
``--warmup-days`` of history (the planners are told the history, never the period), then

1. *single visit* (T5.1): every planner of :data:`SINGLE_VISIT` crawls each user once; reported
   with Def. 3's potentiality;
2. *recrawl* (T1/T2): for each r of ``--per-user``, every planner of :data:`PLANNERS` gets the
   budget of r crawls per user (round-robin spends exactly r·N), under the API's limits
   (``--per-crawl`` posts per call, ``--per-hour`` calls per clock hour).

It reports, per population, method and budget, the metrics of :mod:`bench.freshness.metrics`
(overall and per class) and each method's gain over round-robin measured in the same run:
messages collected ÷ round-robin's − 1 and crawls ÷ round-robin's; and the issue's target per
method: at least +55 % messages with freshness at least round-robin's. Output: JSON, a PNG
(messages and freshness against crawls) and a Markdown table.

The methods are the factories (name → ``Budget -> Planner``) of :data:`PLANNERS` and
:data:`SINGLE_VISIT`: the baselines of :mod:`bench.freshness.baselines` and the paper's planners of
:mod:`frontier.freshness.planners`: Hash with its threshold following the budget's calls per day, and
the paper's mix with c = C and the Poisson period T_P either the paper's 30 days or round-robin's
interval (days ÷ r), so its inactive users are visited as often as round-robin visits them; and
the allocation planner (:mod:`frontier.freshness.allocation`) spending the budget's calls per day,
half of them on freshness (and 0.4, 0.6: its frontier).

    python -m bench.freshness_eval                                  # 10k users, 61 days, seeds 0, 101, 202
    python -m bench.freshness_eval --users 1000 --days 14 --seeds 0 --out /tmp/fresh
    python -m bench.freshness_eval --seeds 0 --trace corpus.csv --trace-cap 2000   # and a replayed corpus
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np
import orjson

from bench.freshness.baselines import Cyclic, RateProportional, RoundRobin
from bench.freshness.metrics import measure
from bench.freshness.simulator import Limits, simulate
from bench.freshness.trace import Trace
from bench.invitro.posting import DAY, Population, PostingParams
from frontier.freshness.allocation import AllocationPlanner
from frontier.freshness.params import AllocationParams, PlannerParams, PoissonParams
from frontier.freshness.planner import Planner
from frontier.freshness.planners import hash_planner, paper_planner, poisson_planner
from frontier.markdown_table import markdown_table

START = 1_351_699_200.0 - 8 * 3600.0  # 2012-11-01 00:00 UTC+8, the paper's 61-day period (Table 5.1, run 1)
BASELINE = "round-robin"
TARGET_GAIN = 0.55


@dataclass(frozen=True, slots=True)
class Budget:
    """What a planner factory is given: the population's size, the crawls it may spend and a seed."""

    users: int
    per_user: int
    """Round-robin's crawls per user; the budget is per_user × users calls."""
    seed: int
    limits: Limits
    days: float
    """The period's length: a planner with a budget per day spends crawls ÷ days a day."""

    @property
    def crawls(self) -> int:
        return self.per_user * self.users


PlannerFactory = Callable[[Budget], Planner]


def _budget_params(budget: Budget) -> PlannerParams:
    """The calls a day of ``budget`` as the planner's target: Hash's threshold c follows it, the
    allocation planner spends it."""
    return PlannerParams(per_crawl=budget.limits.per_crawl, calls_per_day=budget.crawls / budget.days)


def _paper_params(budget: Budget, period_days: float) -> PlannerParams:
    """The paper's routing with c = C (a Hash user is crawled when a full call is expected) and the
    Poisson users visited once per ``period_days``."""
    return PlannerParams(per_crawl=budget.limits.per_crawl, poisson=PoissonParams(period_days=period_days))


def _allocation_params(budget: Budget, fresh_share: float) -> PlannerParams:
    """The allocation planner spending ``fresh_share`` of the budget on freshness (the default is ½):
    the rows on either side of the default trace its frontier of messages against freshness."""
    return replace(_budget_params(budget), allocation=AllocationParams(fresh_share=fresh_share))


PLANNERS: dict[str, PlannerFactory] = {
    BASELINE: lambda b: RoundRobin(b.per_user, b.seed),
    "rate-proportional": lambda b: RateProportional(b.crawls, b.seed),
    "hash": lambda b: hash_planner(_budget_params(b)),
    "paper": lambda b: paper_planner(_paper_params(b, 30.0)),
    "paper, T_P = days / r": lambda b: paper_planner(_paper_params(b, b.days / b.per_user)),
    "allocation": lambda b: AllocationPlanner(_budget_params(b)),
    "allocation, fresh share 0.4": lambda b: AllocationPlanner(_allocation_params(b, 0.4)),
    "allocation, fresh share 0.6": lambda b: AllocationPlanner(_allocation_params(b, 0.6)),
}
SINGLE_VISIT: dict[str, PlannerFactory] = {
    "round-robin (cyclic)": lambda b: Cyclic(),
    "poisson organ pipe": lambda b: poisson_planner(_paper_params(b, 0.0)),
}


def run_method(factory: PlannerFactory, budget: Budget, trace: Trace, start: float, end: float) -> dict[str, Any]:
    began = time.perf_counter()
    overall, by_class = measure(simulate(factory(budget), trace, start, end, budget.limits))
    return {"overall": overall.as_dict(), "by_class": {str(c): m.as_dict() for c, m in by_class.items()},
            "seconds": time.perf_counter() - began}


def population_figures(trace: Trace, start: float, end: float) -> dict[str, float]:
    """The calibration the digest asks for (§6.2 item 2), measured on the period."""
    per_day = np.array([np.count_nonzero((p >= start) & (p < end)) for p in trace.posts.values()]) / ((end - start) / DAY)
    return {"users": len(trace.users), "posts_per_user_day": float(per_day.mean()),
            "rms_posts_per_day": float(np.sqrt((per_day ** 2).mean())),
            "share_below_1_per_day": float((per_day < 1).mean()), "share_above_10_per_day": float((per_day > 10).mean())}


def evaluate(label: str, trace: Trace, start: float, end: float, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Every registered planner on one trace: the single visit, then each budget of ``--per-user``."""
    users, limits = len(trace.users), Limits(args.per_crawl, args.per_hour)
    days = (end - start) / DAY
    once = Budget(users, 1, seed, limits, days)
    single = {name: run_method(f, once, trace, start, end) for name, f in SINGLE_VISIT.items()}
    recrawl: dict[str, dict[str, Any]] = {}
    for r in args.per_user:
        budget = Budget(users, r, seed, limits, days)
        rows = {name: run_method(f, budget, trace, start, end) for name, f in PLANNERS.items()}
        base = rows[BASELINE]["overall"]
        for row in rows.values():
            m = row["overall"]
            row["messages_gain"] = m["collected"] / base["collected"] - 1.0
            row["crawls_ratio"] = m["crawls"] / base["crawls"]
            row["meets_target"] = bool(row["messages_gain"] >= TARGET_GAIN and m["freshness"] >= base["freshness"])
        recrawl[str(r)] = rows
        print(f"{label} r={r}: " + ", ".join(f"{n} {v['overall']['collected']:,} msgs {v['overall']['crawls']:,}"
                                             f" crawls fresh {v['overall']['freshness']:.3f}" for n, v in rows.items()))
    return {"label": label, "seed": seed, "start": start, "end": end,
            "population": population_figures(trace, start, end), "single_visit": single, "recrawl": recrawl}


def evaluate_population(seed: int, role: str, args: argparse.Namespace) -> dict[str, Any]:
    start = args.start if args.start is not None else START
    end = start + args.days * DAY
    population = Population(PostingParams(users=args.users, seed=seed))
    trace = Trace.from_population(population, start - args.warmup_days * DAY, end)
    return evaluate(f"seed {seed} ({role})", trace, start, end, seed, args)


def evaluate_replay(path: Path, args: argparse.Namespace) -> dict[str, Any]:
    """A replayed ``user_id,unix_ts`` trace: the period starts ``--warmup-days`` after its first post
    (or at ``--start``) and lasts ``--days``; users at ``--trace-cap`` posts are left-truncated."""
    trace = Trace.from_csv(path, args.trace_cap)
    first = min((float(p[0]) for p in trace.posts.values() if len(p)), default=0.0)
    start = args.start if args.start is not None else first + args.warmup_days * DAY
    return evaluate(f"trace {path.name}", trace, start, start + args.days * DAY, 0, args)


def markdown(result: dict[str, Any]) -> list[str]:
    params = result["parameters"]
    title = (f"# Freshness evaluation ({params['days']} days, {params['per_crawl']} posts per call, "
             f"{params['per_hour']} calls per hour)")
    lines = [title, ""]
    for pop in result["populations"]:
        figures = pop["population"]
        lines += [f"## {pop['label']}: {figures['users']:,} users, {figures['posts_per_user_day']:.2f} posts/user/day", ""]
        lines += markdown_table(["single visit", "messages", "crawls", "potentiality", "freshness"],
                                [[name, f"{m['overall']['collected']:,}", f"{m['overall']['crawls']:,}",
                                  f"{m['overall']['potentiality']:,.0f}", f"{m['overall']['freshness']:.3f}"]
                                 for name, m in pop["single_visit"].items()])
        rows = []
        for r, methods in pop["recrawl"].items():
            for name, row in methods.items():
                m = row["overall"]
                rows.append([r, name, f"{m['crawls']:,}", f"{m['collected']:,}", f"{row['messages_gain']:+.1%}",
                             f"{m['efficiency']:.1f}", f"{m['lost_to_cap']:,}", f"{m['freshness']:.3f}",
                             f"{m['staleness']:,.0f}", f"{m['delay'] / 3600:.1f}", "yes" if row["meets_target"] else "no"])
        lines += markdown_table(["r", "method", "crawls", "messages", "vs RR", "msgs/crawl", "lost to cap",
                                 "freshness", "staleness", "delay (h)", "target"], rows)
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    def ints(text: str) -> list[int]:
        try:
            return [int(x) for x in text.split(",")]
        except ValueError:
            raise argparse.ArgumentTypeError(f"a comma-separated list of integers, got {text!r}") from None

    parser = argparse.ArgumentParser(prog="python -m bench.freshness_eval", description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=10_000)
    parser.add_argument("--days", type=int, default=61)
    parser.add_argument("--warmup-days", type=int, default=14, help="history the planners see before the period")
    parser.add_argument("--seeds", type=ints, default=[0, 101, 202], help="populations; the first is the tuning one")
    parser.add_argument("--trace", type=Path, action="append", default=[],
                        help="also replay this user_id,unix_ts CSV (repeatable)")
    parser.add_argument("--trace-cap", type=int, default=None,
                        help="a replayed user with this many posts is left-truncated (the paper's 2,000)")
    parser.add_argument("--start", type=float, default=None,
                        help=f"the period's start, unix seconds (default {START:.0f} for populations)")
    parser.add_argument("--per-user", type=ints, default=[2, 3, 4, 5], help="round-robin's crawls per user")
    parser.add_argument("--per-crawl", type=int, default=100, help="most posts per call (C)")
    parser.add_argument("--per-hour", type=int, default=150, help="most calls per clock hour")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("freshness_eval"),
                        help="writes OUT.json, OUT.png and OUT.md")
    args = parser.parse_args(argv)
    for key in ("users", "days", "per_crawl", "per_hour"):
        if getattr(args, key) < 1:
            parser.error(f"--{key.replace('_', '-')}: must be >= 1, got {getattr(args, key)}")
    if args.trace_cap is not None and args.trace_cap < 1:
        parser.error(f"--trace-cap: must be >= 1, got {args.trace_cap}")
    if args.warmup_days < 0 or min(args.per_user) < 1:
        parser.error("--warmup-days must be >= 0 and every --per-user >= 1")
    return args


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result: dict[str, Any] = {
        "parameters": {"users": args.users, "days": args.days, "warmup_days": args.warmup_days, "seeds": args.seeds,
                       "traces": [str(p) for p in args.trace], "trace_cap": args.trace_cap,
                       "per_user": args.per_user, "per_crawl": args.per_crawl, "per_hour": args.per_hour,
                       "start": START, "target_gain": TARGET_GAIN},
        "populations": [evaluate_population(seed, "tuning" if i == 0 else "unseen", args)
                        for i, seed in enumerate(args.seeds)]
        + [evaluate_replay(path, args) for path in args.trace],
    }
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    out.with_suffix(".md").write_text("\n".join(markdown(result)))
    from bench.plots import freshness_eval

    freshness_eval(result, out.with_suffix(".png"))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
