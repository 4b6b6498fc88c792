"""The SOUrCe evaluation (issue 14): learn on each lab site, then crawl it for UCC and for targets.

Digest ``/work/shared/papers/source.md`` §4.4 (metrics) and §5.2 (ST-03, ST-04). For every lab
site and its held-out variants (another seed and a dialect that renames every fixed URL word),
this

1. runs ``crawl learn source`` with ``--train-pages`` downloads and, for the comparison,
   ``crawl learn clustergraph`` with ``--cg-train-pages``; training downloads are charged to
   nothing else (A18);
2. crawling-for-UCC: crawls ``--budget`` pages three times from the same seeds with the same
   scheduler: breadth-first, ``--policy source-ucc`` and the cluster-graph policy in its gd
   order, and scores each from the server's request log (:func:`ucc_figures`);
3. crawling-for-target, for two target types per site (the paper's Detail and Profile, table
   below): the budget is the number of pages of that type in the site's census (optionally
   capped by ``--target-cap``), the example pages are ``--examples`` pages of that type drawn
   at random (seed 0) from SOUrCe's training sample, judged by the lab's truth
   (:func:`example_pages`; the paper draws one); the same three crawls, SOUrCe's being
   ``--policy source-target`` with those examples (:func:`target_figures`);
4. checks the issue's goals (:func:`checks`): VR ≥ 0.99 with UCC recall at least BFS's, and
   target F ≥ 0.85.

Output: a table per site and the goals on stdout, JSON (``--json``) and a plot of harvest rate
against downloads per site and task (``--plot``).

Target types (the lab's ``Truth.type``):

=========  ==============  =================================================
site       Detail          Profile
=========  ==============  =================================================
blog       ``post``        ``profile``
forum      ``thread``      ``profile`` (``/u/UID``)
books      ``review``      ``profile`` (``/USER``)
microblog  ``presence``    ``stream`` (a user's own stream, its cursor pages
                           included: the site's only per-user UCC page)
=========  ==============  =================================================

Figures (all from the first BUDGET page requests of the log, read by
:func:`bench.invitro.social.score.downloads`):

- UCC: ``ratio`` = VR, downloads whose truth shows user-created content ÷ downloads (the
  paper's per-page valid ratio with UCC labelled per page type, A22); ``ratio_new`` = UCC
  downloads whose content key no earlier download carried ÷ downloads (score.py's
  ``ucc_valid_ratio``, the stricter figure); ``recall`` = distinct UCC pages downloaded ÷ the
  census's UCC pages (the paper's §4.4 recall, by page); ``recall_keys`` = the census's UCC
  content keys carried ÷ all of them (score.py's ``ucc_recall``: a duplicate URL of a page
  already carried adds nothing); ``f`` = F(VR, recall); ``entropy`` = eq. 13 over
  the downloads' page types, log2 (every lab page has a type, so A23's "−1" never arises).
- Target: ``ratio`` = HR, downloads of the target type ÷ downloads; ``recall`` = distinct
  content keys of that type carried ÷ those in the census (the type's keys are one per page
  on every lab site, so this is the census count of the type); ``f`` = F(HR, recall).
- ``curve``: ``[downloads, harvested]`` every 100 downloads and at the last, harvested being
  the ratio's numerator (UCC or target downloads).

Choices: ``--learn-set`` goes to ``crawl learn source`` only (its parameters are not the
cluster graph's); ``--cg-learn-set`` to ``crawl learn clustergraph``. A crawl of the same method
and budget is run once per variant and shared between tasks (the breadth-first and the
cluster-graph crawls do not depend on the target). When no page of a target type is in the
training sample, SOUrCe's target crawl is skipped and its goal counts as failed.

    python -m bench.source_eval                                   # every site, 5,000 pages for UCC
    python -m bench.source_eval --sites forum --variants 0 --tasks ucc --budget 500 --train-pages 300
    python -m bench.source_eval --keep DIR --reuse                 # score again what DIR holds
"""

from __future__ import annotations

import argparse
import math
import random
import zlib
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from bench.invitro.requestlog import LogRecord
from bench.invitro.social.census import Census, census
from bench.invitro.social.score import downloads, score
from bench.invitro.social.web import SocialWeb
from bench.lab_runs import SCORING_PORT, Variant, crawl, each_variant, lab_arguments, learn
from bench.runner import machine, write_result
from bench.source_metrics import clustering_quality, f_measure, harvest_rate, recall, valid_ratio
from frontier.source.train import SamplePage, read_sample

TASKS = ("ucc", "target")
METHODS = ("bfs", "source", "clustergraph")
TARGETS: dict[str, dict[str, str]] = {
    "blog": {"detail": "post", "profile": "profile"},
    "forum": {"detail": "thread", "profile": "profile"},
    "books": {"detail": "review", "profile": "profile"},
    "microblog": {"detail": "presence", "profile": "stream"},
}
"""per site, the lab page type of the paper's Detail and Profile targets (module docstring)"""
CURVE_STEP = 100
VR_GOAL = 0.99
TARGET_F_GOAL = 0.85


# -- scoring: pure functions of a crawl's log records, the lab's truth and its census ----------------


def harvest_curve(hits: Sequence[bool], step: int = CURVE_STEP) -> list[list[int]]:
    """``[downloads, harvested so far]`` after every ``step`` downloads and after the last one."""
    points, harvested = [], 0
    for n, hit in enumerate(hits, 1):
        harvested += hit
        if n % step == 0 or n == len(hits):
            points.append([n, harvested])
    return points


def type_entropy(counts: Iterable[int]) -> float:
    """Eq. 13: −Σ p·log₂ p over the page types' shares of the downloads (0 for no download)."""
    present = [c for c in counts if c]
    total = sum(present)
    return -sum(c / total * math.log2(c / total) for c in present) if total else 0.0


def ucc_figures(records: Sequence[LogRecord], web: SocialWeb, site: str, lab: Census) -> dict[str, Any]:
    """A crawling-for-UCC run judged: VR, VR new, UCC recall (of pages, the paper's; and of content
    keys), F (of VR and the paper's recall), entropy, curve (module docstring)."""
    judged = score(records, web, site, census=lab)
    fetched = downloads(records, web, site)
    hits = [truth.ucc for _, truth in fetched]
    vr = valid_ratio(sum(hits), len(hits))
    ucc_pages = {(record.host, record.target) for record, truth in fetched if truth.ucc}
    pages_recall = recall(len(ucc_pages), sum(1 for truth in lab.truths if truth.ucc))
    return {"downloads": len(hits), "ratio": vr, "ratio_new": judged.ucc_valid_ratio, "recall": pages_recall,
            "recall_keys": judged.ucc_recall or 0.0, "f": f_measure(vr, pages_recall),
            "entropy": type_entropy(judged.by_type.values()), "by_type": judged.by_type, "curve": harvest_curve(hits)}


def target_keys(lab: Census, page_type: str) -> frozenset[str]:
    """The content keys of the census's pages of ``page_type`` (recall's denominator)."""
    return frozenset(truth.content_key for truth in lab.truths if truth.type == page_type and truth.content_key)


def target_figures(records: Sequence[LogRecord], web: SocialWeb, site: str, page_type: str,
                   lab: Census) -> dict[str, Any]:
    """A crawling-for-target run judged: HR, recall, F and curve for pages of ``page_type``."""
    judged = downloads(records, web, site)
    hits = [truth.type == page_type for _, truth in judged]
    carried = {truth.content_key for record, truth in judged if record.status == 200 and truth.type == page_type}
    wanted = target_keys(lab, page_type)
    hr = harvest_rate(sum(hits), len(hits))
    found = recall(len(carried & wanted), len(wanted))
    return {"downloads": len(hits), "ratio": hr, "recall": found, "f": f_measure(hr, found),
            "curve": harvest_curve(hits)}


def target_budget(lab: Census, page_type: str, cap: int | None = None) -> int:
    """B = the census's pages of ``page_type`` (§3.6), at most ``cap``."""
    pages = lab.by_type.get(page_type, 0)
    return min(pages, cap) if cap else pages


def example_pages(sample: Iterable[SamplePage], web: SocialWeb, page_type: str, n: int = 1) -> list[str]:
    """The final URLs of ``n`` pages of ``page_type`` drawn at random (seed 0) from the training
    sample, in sample order (all of them when it has fewer)."""
    found = [page.final_url for page in sample if web.truth_of_url(page.final_url).type == page_type]
    chosen = sorted(random.Random(0).sample(range(len(found)), min(n, len(found))))
    return [found[i] for i in chosen]


def checks(result: dict[str, Any]) -> list[dict[str, Any]]:
    """The issue's goals on one site's result: SOUrCe's VR and UCC recall, and its F per target."""
    found = []
    if "ucc" in result:
        ran = result["ucc"]["methods"]
        found.append(_goal("UCC: VR", ran["source"]["ratio"], VR_GOAL))
        found.append(_goal("UCC: recall vs BFS", ran["source"]["recall"], ran["bfs"]["recall"]))
    for role, task in result.get("target", {}).items():
        source = task["methods"].get("source")
        found.append(_goal(f"target {role} ({task['type']}): F", source["f"] if source else None, TARGET_F_GOAL))
    return found


def _goal(name: str, value: float | None, goal: float) -> dict[str, Any]:
    return {"name": name, "value": value, "goal": goal, "ok": value is not None and value >= goal}


# -- running the crawls -------------------------------------------------------------------------------


def source_args(model: Path, examples: Sequence[str] = ()) -> list[str]:
    """``crawl run``'s arguments for SOUrCe: for UCC, or for the target type of the ``examples``."""
    if not examples:
        return ["--policy", "source-ucc", "--model", str(model)]
    return ["--policy", "source-target", "--model", str(model),
            *(arg for url in examples for arg in ("--target-example", url))]


def clustergraph_args(model: Path) -> list[str]:
    """``crawl run``'s arguments for the cluster-graph baseline, in its gd order."""
    return ["--policy", "clustergraph", "--model", str(model), "--set", 'policy.order="gd"']


@dataclass(frozen=True)
class Plan:
    """What to run on every variant (the command-line options)."""

    tasks: tuple[str, ...] = TASKS
    train_pages: int = 1000
    cg_train_pages: int = 2000
    budget: int = 5000
    target_cap: int | None = None
    examples: int = 1
    learn_settings: tuple[str, ...] = ()
    cg_learn_settings: tuple[str, ...] = ()
    crawl_settings: tuple[str, ...] = ()
    reuse: bool = False


@dataclass
class Crawls:
    """The crawls of one variant, each (name, budget) run once and shared by the tasks that need it."""

    variant: Variant
    folder: Path
    plan: Plan
    done: dict[tuple[str, int], tuple[list[LogRecord], dict[str, Any]]] = field(default_factory=dict)

    def run(self, name: str, budget: int, policy: Sequence[str]) -> tuple[list[LogRecord], dict[str, Any]]:
        key = (name, budget)
        if key not in self.done:
            self.done[key] = crawl(self.variant, self.folder / f"{name}-{budget}", budget, policy,
                                   self.plan.crawl_settings, self.plan.reuse)
        return self.done[key]


def source_model_summary(folder: Path, web: SocialWeb) -> dict[str, Any]:
    """Clusters, outlier pages, eps, warnings of a SOUrCe model folder, and its clustering's purity
    and micro-F against the lab's page types (ST-01)."""
    from frontier.source.model import Model

    model = Model.load(folder)
    quality = clustering_quality(model.labels.tolist(), [web.truth_of_url(url).type for url in model.pages],
                                 model.params.min_pts)
    return {"clusters": model.n_clusters, "pages": len(model.pages), "outliers": int((model.labels < 0).sum()),
            "eps": model.eps.eps, "eps_fallback": model.eps.fallback, "warnings": list(model.warnings), **quality}


def evaluate(variant: Variant, folder: Path, plan: Plan) -> dict[str, Any]:
    """Learn both models on the variant, run the plan's tasks and judge them (module docstring)."""
    folder.mkdir(parents=True, exist_ok=True)
    trained = {"source": learn(variant, folder / "learn-source", "source", plan.train_pages,
                               plan.learn_settings, plan.reuse),
               "clustergraph": learn(variant, folder / "learn-clustergraph", "clustergraph", plan.cg_train_pages,
                                     plan.cg_learn_settings, plan.reuse)}
    web = SocialWeb(variant.params(), SCORING_PORT)
    lab = census(web.site_named(variant.site))
    result: dict[str, Any] = {
        "site": variant.site, "seed": variant.seed, "dialect": variant.dialect, "label": variant.label,
        "training": {name: {k: t[k] for k in ("downloads", "cpu_seconds", "wall_seconds")}
                     for name, t in trained.items()},
        "model": source_model_summary(trained["source"]["model"], web),
        "census": {"pages": lab.pages, "ucc_keys": len(lab.ucc_keys), "by_type": lab.by_type},
    }
    crawls = Crawls(variant, folder, plan)
    models = Models(trained["source"]["model"], trained["clustergraph"]["model"])
    if "ucc" in plan.tasks:
        result["ucc"] = ucc_task(crawls, models, web, lab)
    if "target" in plan.tasks:
        sample = read_sample(models.source / "sample.jsonl")
        result["target"] = {role: target_task(crawls, models, web, lab, page_type,
                                              example_pages(sample, web, page_type, plan.examples))
                            for role, page_type in TARGETS[variant.site].items()}
    result["checks"] = checks(result)
    return result


@dataclass(frozen=True)
class Models:
    """The model folders of one variant."""

    source: Path
    clustergraph: Path


def ucc_task(crawls: Crawls, models: Models, web: SocialWeb, lab: Census) -> dict[str, Any]:
    """Crawling-for-UCC at the plan's budget: breadth-first, SOUrCe and the cluster graph, judged."""
    budget = crawls.plan.budget
    runs = {"bfs": crawls.run("bfs", budget, []),
            "source": crawls.run("source-ucc", budget, source_args(models.source)),
            "clustergraph": crawls.run("clustergraph", budget, clustergraph_args(models.clustergraph))}
    site = crawls.variant.site
    return {"budget": budget, "ratio_name": "VR",
            "methods": {method: {**ucc_figures(records, web, site, lab), "policy": stats.get("policy", {})}
                        for method, (records, stats) in runs.items()}}


def target_task(crawls: Crawls, models: Models, web: SocialWeb, lab: Census, page_type: str,
                examples: list[str]) -> dict[str, Any]:
    """Crawling-for-target of ``page_type`` with B = its census count (capped), judged.

    SOUrCe runs only with ``examples``; nothing runs when the census has no page of
    the type (a budget of 0 would be no limit to ``crawl run``)."""
    budget = target_budget(lab, page_type, crawls.plan.target_cap)
    runs = {}
    if budget:
        runs = {"bfs": crawls.run("bfs", budget, []),
                "clustergraph": crawls.run("clustergraph", budget, clustergraph_args(models.clustergraph))}
        if examples:
            chosen = zlib.crc32(" ".join(examples).encode())  # a kept crawl is reused for the same examples only
            runs["source"] = crawls.run(f"source-{page_type}-{len(examples)}-{chosen:08x}", budget,
                                        source_args(models.source, examples))
    site = crawls.variant.site
    return {"type": page_type, "budget": budget, "census_pages": lab.by_type.get(page_type, 0), "examples": examples,
            "ratio_name": "HR",
            "methods": {method: {**target_figures(records, web, site, page_type, lab), "policy": stats.get("policy", {})}
                        for method, (records, stats) in runs.items()}}


# -- reporting ----------------------------------------------------------------------------------------


def print_table(result: dict[str, Any]) -> None:
    model = result["model"]
    print(f"== {result['label']}: SOUrCe trained on {result['training']['source']['downloads']} downloads "
          f"({model['clusters']} clusters, {model['outliers']} outliers, eps {model['eps']:.4f}, purity "
          f"{model['purity']:.3f}, micro-F {model['micro_f']:.3f}), cluster graph on "
          f"{result['training']['clustergraph']['downloads']}; census {result['census']['pages']} pages")
    print(f"{'task':>18} {'budget':>6} {'method':>12} {'ratio':>6} {'new':>6} {'recall':>6} {'keys':>6} {'F':>6} "
          f"{'entropy':>7}")
    tasks = ([("ucc", result["ucc"])] if "ucc" in result else []) + [
        (f"{role} {task['type']}", task) for role, task in result.get("target", {}).items()]
    for name, task in tasks:
        for method in METHODS:
            s = task["methods"].get(method)
            if s is None:
                why = "no example page of the type in the sample" if task["budget"] else "no page of the type"
                print(f"{name:>18} {task['budget']:>6} {method:>12}  (not run: {why})")
                continue
            print(f"{name:>18} {task['budget']:>6} {method:>12} {s['ratio']:6.3f} {_optional(s.get('ratio_new'))} "
                  f"{s['recall']:6.3f} {_optional(s.get('recall_keys'))} {s['f']:6.3f} {_optional(s.get('entropy'), 7)}")
    for check in result["checks"]:
        print(f"   {'PASS' if check['ok'] else 'FAIL'} {check['name']} = {_optional(check['value'])} "
              f"(goal ≥ {check['goal']:.3f})")


def _optional(value: float | None, width: int = 6) -> str:
    return f"{value:{width}.3f}" if value is not None else f"{'-':>{width}}"


def print_summary(results: Sequence[dict[str, Any]]) -> None:
    outcome = Counter(check["ok"] for result in results for check in result["checks"])
    print(f"== goals: {outcome[True]} met, {outcome[False]} missed")
    for result in results:
        for check in result["checks"]:
            if not check["ok"]:
                print(f"   missed: {result['label']}: {check['name']} = {_optional(check['value']).strip()}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lab_arguments(parser, "source_eval")
    parser.add_argument("--tasks", default=",".join(TASKS), help="comma-separated tasks: ucc, target")
    parser.add_argument("--train-pages", type=int, default=1000, help="downloads of SOUrCe's training sample")
    parser.add_argument("--cg-train-pages", type=int, default=2000, help="downloads of the cluster graph's sample")
    parser.add_argument("--budget", type=int, default=5000, help="pages of each crawling-for-UCC run")
    parser.add_argument("--target-cap", type=int, help="at most this many pages per crawling-for-target run")
    parser.add_argument("--examples", type=int, default=1,
                        help="example pages per target type, drawn from the training sample (the paper: 1)")
    parser.add_argument("--learn-set", action="append", default=[], help="--set for crawl learn source")
    parser.add_argument("--cg-learn-set", action="append", default=[], help="--set for crawl learn clustergraph")
    args = parser.parse_args(argv)
    tasks = tuple(args.tasks.split(","))
    if not set(tasks) <= set(TASKS):
        parser.error(f"--tasks: expected some of {', '.join(TASKS)}")
    plan = Plan(tasks, args.train_pages, args.cg_train_pages, args.budget, args.target_cap, args.examples,
                tuple(x for s in args.learn_set for x in ("--set", s)),
                tuple(x for s in args.cg_learn_set for x in ("--set", s)), tuple(args.set), args.reuse)
    at_start = machine()
    results = each_variant(args, lambda variant, folder: evaluate(variant, folder, plan), print_table)
    print_summary(results)
    output = {"tasks": list(tasks), "train_pages": plan.train_pages, "cg_train_pages": plan.cg_train_pages,
              "budget": plan.budget, "target_cap": plan.target_cap, "examples": plan.examples, "targets": TARGETS,
              "goals": {"vr": VR_GOAL, "target_f": TARGET_F_GOAL}, "sites": results, "machine": at_start}
    write_result(args.json, output)
    from bench.plots import source_eval

    source_eval(output, args.plot)


if __name__ == "__main__":
    main()
