"""Can what a call returns time the next freshness call? (issue 15; the allocation planner's open gap).

Every planner of :mod:`bench.freshness_eval` spaces a user's freshness calls on a fixed grid. A call
returns the user's newest posts, so it shows how long ago the user last posted: a user caught in
a burst will be stale again soon, one long silent may stay fresh. This measures, on the ground
truth of generated populations (``bench/invitro/posting.py``), per user class, whether waits
that depend on that age beat even waits at equal calls:

1. *policies*: each user of a class is called at the crawl hour (``--hour``, local) of a day, its
   first call on a random day within its longest wait; *even* waits k days after every call (k = 1..30:
   an envelope of freshness against calls per user); a *state-dependent* policy waits w_b days
   after a call whose newest post is in age bucket b (:data:`AGE_BUCKETS`). ``--policies`` random
   policies are drawn on the tuning seed and the ``--keep`` best by gain over the even envelope
   (freshness at equal calls, interpolated) are measured again on the other seeds, with the
   burst-chasing rule (1 day after a call that saw a post in the last day, k days otherwise).
   The *perfect-information* bound: n calls each just after one of the n posts followed by the
   longest silences (what knowing when bursts end would buy);
2. *ceiling*: at ``--eval-users``, round-robin, the allocation planner, and the allocation planner
   reading each user's day chain from all the days, the period's too (a bound on what learning
   the chains from the calls could reach), at RR's budgets ``--per-user``, per class.

    python -m bench.freshness_timing                     # writes bench/freshness_timing.json and .md
    python -m bench.freshness_timing --per-class 100 --policies 20 --eval-users 300 --out /tmp/t
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from bench.freshness.metrics import stale_time
from bench.freshness.simulator import Limits
from bench.freshness.trace import Trace
from bench.freshness_eval import BASELINE, PLANNERS, START, Budget, _budget_params, run_method
from bench.invitro.posting import DAY, HOUR, Population, PostingParams
from frontier.freshness.allocation import AllocationPlanner
from frontier.freshness.params import PlannerParams
from frontier.markdown_table import markdown_table

Floats = npt.NDArray[np.float64]
AGE_BUCKETS = np.array([6.0, 24.0, 72.0, 168.0]) * HOUR
"""Upper edges of the ages (newest post to call) a state-dependent policy tells apart: < 6 h, < 1 d, < 3 d, < 7 d, older."""
EVEN_WAITS = range(1, 31)
BOUND_CALLS = (2, 3, 4, 6, 8)


def call_times(posts: Floats, waits: Sequence[float], first: float, end: float) -> Floats:
    """The calls of a policy: one at ``first``, then after each call at t the wait (days) of the age
    bucket of the newest post at or before t (no post: the oldest bucket)."""
    calls = []
    t = first
    while t < end:
        calls.append(t)
        k = int(np.searchsorted(posts, t, side="right"))
        age = t - float(posts[k - 1]) if k else np.inf
        t += waits[int(np.searchsorted(AGE_BUCKETS, age, side="right"))] * DAY
    return np.asarray(calls)


def freshness(posts: Floats, calls: Floats, start: float, end: float) -> float:
    """The share of [start, end) with no post of the period left unarchived (a post is archived by the
    first call at or after it); posts before ``start`` are archived."""
    period = posts[(posts >= start) & (posts < end)]
    i = np.searchsorted(calls, period, side="left")
    archived = np.append(calls, end)[i]  # never archived: stale to the end
    return 1.0 - stale_time(period - start, archived - start) / (end - start)


def policy_point(users: list[Floats], phases: Floats, waits: Sequence[float], hour: float,
                 start: float, end: float) -> tuple[float, float]:
    """(calls per user, freshness) of a policy over ``users``; the first call of each at its phase of
    the policy's longest wait, at the crawl hour."""
    calls = fresh = 0.0
    for posts, phase in zip(users, phases, strict=True):
        first = start + hour * HOUR + np.floor(phase * max(waits)) * DAY
        times = call_times(posts, waits, first, end)
        calls += len(times)
        fresh += freshness(posts, times, start, end)
    return calls / len(users), fresh / len(users)


def perfect_information(users: list[Floats], start: float, end: float, calls: int) -> float:
    """The freshness of ``calls`` calls each made just after one of the posts followed by the longest
    silences (a user is fresh from the start to its first post of the period)."""
    total = 0.0
    for posts in users:
        period = posts[(posts >= start) & (posts < end)]
        if not len(period):
            total += 1.0
            continue
        silences = np.sort(np.diff(np.concatenate((period, [end]))))[::-1]
        total += (period[0] - start + silences[:calls].sum()) / (end - start)
    return total / len(users)


def gain(point: tuple[float, float], envelope: list[tuple[float, float]]) -> float | None:
    """Freshness above the even waits' envelope at the same calls per user (None outside it)."""
    calls, fresh = np.array(sorted(envelope)).T
    if not calls.min() <= point[0] <= calls.max():
        return None
    return point[1] - float(np.interp(point[0], calls, fresh))


def class_users(population: Population, user_class: int, count: int, start: float, end: float) -> list[Floats]:
    users = [u for u in population.users if population.user_class(u) == user_class][:count]
    return [np.asarray(population.posts(u, start - 14 * DAY, end)) for u in users]


def policies(args: argparse.Namespace) -> dict[str, Any]:
    start, end = START, START + args.days * DAY
    rng = np.random.default_rng(args.seeds[0])
    drawn = [tuple(float(w) for w in rng.integers(1, 25, len(AGE_BUCKETS) + 1)) for _ in range(args.policies)]
    chase = {f"1 d after a post in the last day, else {k} d": (1.0, 1.0, k, k, k) for k in (5.0, 10.0, 15.0, 20.0, 30.0)}
    result: dict[str, Any] = {}
    for user_class in (1, 2):
        per_seed: dict[str, Any] = {}
        kept: list[tuple[float, ...]] = []
        for i, seed in enumerate(args.seeds):
            population = Population(PostingParams(users=args.users, seed=seed))
            users = class_users(population, user_class, args.per_class, start, end)
            phases = np.random.default_rng([seed, 1]).uniform(0.0, 1.0, len(users))
            even = [policy_point(users, phases, [float(k)] * 5, args.hour, start, end) for k in EVEN_WAITS]
            if i == 0:
                scored = [(gain(policy_point(users, phases, w, args.hour, start, end), even), w) for w in drawn]
                ranked = sorted(((g, w) for g, w in scored if g is not None), reverse=True)
                kept = [w for _, w in ranked[:args.keep]]
                per_seed["best gain of the drawn, tuning seed"] = ranked[0][0] if ranked else None
            rows = {**{f"drawn {w}": w for w in kept}, **chase}
            measured = {}
            for name, waits in rows.items():
                point = policy_point(users, phases, waits, args.hour, start, end)
                measured[name] = {"calls": point[0], "freshness": point[1], "gain": gain(point, even)}
            per_seed[str(seed)] = {
                "users": len(users), "even": [{"wait": k, "calls": c, "freshness": f} for k, (c, f) in zip(EVEN_WAITS, even, strict=True)],
                "policies": measured,
                "perfect_information": {str(n): perfect_information(users, start, end, n) for n in BOUND_CALLS}}
            print(f"class {user_class} seed {seed}: " + ", ".join(
                f"{n}: {m['gain']:+.3f}" if m["gain"] is not None else f"{n}: -" for n, m in measured.items()), flush=True)
        result[str(user_class)] = per_seed
    return result


class ChainCeiling(AllocationPlanner):
    """The allocation planner reading each user's day chain from ``posts``, the period's days too:
    not a planner (it knows the future), a bound on learning the chains from the calls."""

    def __init__(self, params: PlannerParams, posts: list[Floats]) -> None:
        super().__init__(params)
        self.all_posts = posts

    def _chain(self, posts: list[Floats], light: npt.NDArray[np.bool_],
               until: float | None = None) -> tuple[Floats, Floats, Floats]:
        return super()._chain(self.all_posts, light, self.end)


def ceiling(args: argparse.Namespace) -> dict[str, Any]:
    start, end = START, START + args.days * DAY
    result: dict[str, Any] = {}
    for seed in args.seeds:
        trace = Trace.from_population(Population(PostingParams(users=args.eval_users, seed=seed)), start - 14 * DAY, end)
        posts = [np.asarray(trace.posts[u]) for u in trace.users]
        methods = {BASELINE: PLANNERS[BASELINE], "allocation": PLANNERS["allocation"],
                   "allocation, chains from all days (ceiling)": lambda b: ChainCeiling(_budget_params(b), posts)}
        for r in args.per_user:
            budget = Budget(len(trace.users), r, seed, Limits(), float(args.days))
            rows = {name: run_method(f, budget, trace, start, end) for name, f in methods.items()}
            base = rows[BASELINE]["overall"]["collected"]
            for row in rows.values():
                row["messages_gain"] = row["overall"]["collected"] / base - 1.0
            result[f"{seed} {r}"] = rows
            print(f"seed {seed} r={r}: " + ", ".join(f"{n} {row['messages_gain']:+.1%} {row['overall']['freshness']:.3f}"
                                                     for n, row in rows.items()), flush=True)
    return result


def markdown(result: dict[str, Any]) -> list[str]:
    lines = ["# Timing freshness calls by what a call returned", ""]
    for user_class, per_seed in result["policies"].items():
        seeds = [s for s in per_seed if s[0].isdigit()]
        names = list(per_seed[seeds[0]]["policies"])
        lines += [f"## Class {user_class}: freshness above even waits at equal calls per user", ""]
        rows = [[name] + [f"{m['calls']:.1f}, {m['gain']:+.3f}" if (m := per_seed[s]["policies"][name])["gain"] is not None
                          else f"{m['calls']:.1f}, -" for s in seeds] for name in names]
        lines += markdown_table(["waits (days) by age < 6 h, < 1 d, < 3 d, < 7 d, older", *(f"seed {s}: calls, gain" for s in seeds)], rows)
        lines += [""] + markdown_table(["calls per user", *(f"even, seed {s}" for s in seeds), *(f"perfect information, seed {s}" for s in seeds)],
                                       [[str(n)] + [f"{np.interp(n, [e['calls'] for e in per_seed[s]['even']][::-1], [e['freshness'] for e in per_seed[s]['even']][::-1]):.3f}"
                                                    for s in seeds] + [f"{per_seed[s]['perfect_information'][str(n)]:.3f}" for s in seeds]
                                        for n in BOUND_CALLS])
        lines.append("")
    lines += ["## Ceiling: the allocation planner with each user's day chain read from all the days", ""]
    rows = []
    for key, methods in result["ceiling"].items():
        seed, r = key.split()
        for name, row in methods.items():
            by_class = row["by_class"]
            rows.append([seed, r, name, f"{row['overall']['crawls']:,}", f"{row['messages_gain']:+.1%}", f"{row['overall']['freshness']:.3f}",
                         *(f"{by_class[c]['freshness']:.3f}, {by_class[c]['crawls']:,}" for c in ("1", "2", "3"))])
    lines += markdown_table(["seed", "r", "method", "crawls", "messages vs RR", "freshness", "class 1: freshness, calls",
                             "class 2", "class 3"], rows)
    return lines


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    def ints(text: str) -> list[int]:
        return [int(x) for x in text.split(",")]

    parser = argparse.ArgumentParser(prog="python -m bench.freshness_timing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--users", type=int, default=4000, help="the population the policies' users are drawn from")
    parser.add_argument("--per-class", type=int, default=400, help="users of each class the policies are measured on")
    parser.add_argument("--policies", type=int, default=300, help="random state-dependent policies drawn on the tuning seed")
    parser.add_argument("--keep", type=int, default=3, help="the best drawn, measured again on every seed")
    parser.add_argument("--hour", type=float, default=2.0, help="the local crawl hour of the policies")
    parser.add_argument("--eval-users", type=int, default=2000, help="the population of the ceiling's planners")
    parser.add_argument("--per-user", type=ints, default=[2, 3, 4, 5], help="round-robin's calls per user (ceiling)")
    parser.add_argument("--days", type=int, default=61)
    parser.add_argument("--seeds", type=ints, default=[0, 101, 202], help="populations; the first is the tuning one")
    parser.add_argument("--out", type=Path, default=Path(__file__).with_name("freshness_timing"))
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> dict[str, Any]:
    args = parse_args(argv)
    result = {"parameters": {k: v for k, v in vars(args).items() if k != "out"}, "policies": policies(args),
              "ceiling": ceiling(args)}
    out: Path = args.out
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY))
    out.with_suffix(".md").write_text("\n".join(markdown(result)) + "\n")
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return result


if __name__ == "__main__":
    main()
