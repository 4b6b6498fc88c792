"""The cluster-graph evaluation (issue 13): learn on each lab site, then crawl it as d, dg and gd.

For every lab site (and its held-out variants: another seed and a dialect that renames every
fixed URL word, so the project has never seen their URLs), this

1. serves the site alone (``python -m bench.invitro --social SITE``) and runs
   ``crawl learn clustergraph`` on it with ``--train-pages`` downloads; the training downloads
   are counted from the server's log and included in nothing else;
2. for each budget, crawls it three times from the same seeds with the same scheduler (one
   agent, no politeness delay): **d** (breadth-first, duplicate check only), **dg** (duplicate
   lookup, then the graph filter) and **gd** (graph filter, then the duplicate check), each with
   ``--max-pages BUDGET`` against a fresh server, and scores each crawl from the server's
   request log (the first BUDGET page requests) with :mod:`bench.invitro.social.score`: valuable
   share, FP, FN against d's crawl, duplicate and uninformative downloads, UCC figures;
3. reads the crawler's counters (``stats.json``): links extracted, duplicate lookups
   (``frontier.dup_lookups``) and filter calls (the policy's ``filter_calls``), the operation
   counts of the paper's Fig. 5 (digest AT-32: counts, not times);
4. judges the model against the ground truth: the share of ground-truth valuable clusters that
   survive pruning (AT-35) and how often an unseen valuable URL of the site (in the census,
   not in the training sample) maps to a cluster of its own page type (the issue's ≥ 99%).

Output: a table per site on stdout, JSON (``--json``) and a plot of valuable downloads
against downloads for each method and site (``--plot``).

    python -m bench.clustergraph_eval                       # every site, budgets 2000 and 5000
    python -m bench.clustergraph_eval --sites blog --budgets 2000 --variants 0
    python -m bench.clustergraph_eval --keep DIR --reuse     # score again what DIR holds, crawl nothing
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from bench.invitro.social.census import Census, census
from bench.invitro.social.score import score
from bench.invitro.social.site import VALUABLE
from bench.invitro.social.web import SocialWeb, split_url
from bench.lab_runs import SCORING_PORT, Variant, crawl, each_variant, lab_arguments, learn
from bench.runner import machine, write_result
from frontier.clustergraph.model import ClusterFilter, Model

METHODS = ("d", "dg", "gd")


def policy_args(method: str, model: Path) -> list[str]:
    """``crawl run``'s policy arguments for one method: none for d (breadth-first)."""
    return [] if method == "d" else ["--policy", "clustergraph", "--model", str(model),
                                     "--set", f'policy.order="{method}"']


def operation_counts(stats: dict[str, Any]) -> dict[str, int]:
    """Links extracted, duplicate lookups and graph-filter calls of one crawl (digest §2.12, AT-27)."""
    frontier = stats.get("frontier", {})
    policy = stats.get("policy", {})
    return {
        "links": int(stats.get("links", 0)),
        "dup_lookups": int(frontier.get("dup_lookups", 0)),
        "filter_calls": int(sum(policy.get("filter_calls", {}).values())),
    }


def training_measures(folder: Path) -> dict[str, Any]:
    """§2.13 / AT-31: the four measures on prefixes of the sample, and the size where they stop changing."""
    from frontier.clustergraph.train import measures, read_sample, stable_size

    model = Model.load(folder)
    sample = read_sample(folder / "sample.jsonl")
    pages = sum(not record.failed for record in sample)
    rows = measures(sample, model.params, [], sizes=range(250, pages + 1, 250))
    return {"rows": rows, "stable_size": stable_size(rows)}


def filter_misses(records: Sequence[Any], web: SocialWeb, runtime: Any, seeds: Sequence[str],
                  categories: dict[str, str] | None = None) -> dict[str, Any]:
    """The graph filter's false negatives on the links of a crawl's downloaded pages (digest §3.3's FN).

    Every valuable URL linked from a downloaded page (the lab's own links of that page,
    canonicalised as the crawler does) is judged by the model as the policy judges it: from
    the cluster of the page it was found on, a seed's or a redirect's links unrestricted. A URL
    is a false negative when every one of its occurrences is rejected. On d's crawl (a BFS of
    the same budget) this is the issue's "FN against a BFS": what the filter would have thrown
    away of what BFS met.
    """
    from frontier.urls import canonicalize

    categories = {} if categories is None else categories  # URL → truth category: a truth costs a page
    seed_urls = {canonicalize(seed) for seed in seeds}
    accepted: dict[str, bool] = {}
    for record in records:
        answer = web.answer(record.host, record.target)
        if answer is None or not (200 <= answer.status < 400):
            continue
        page = canonicalize(f"http://{record.host}:{SCORING_PORT}{record.target}")
        source = None if page in seed_urls or answer.status >= 300 else runtime.cluster(page)
        for link in dict.fromkeys(answer.links):
            url = canonicalize(link)
            if url is None or url == page or web.site_of(split_url(url)[0]) is None:
                continue
            if url not in categories:
                categories[url] = web.truth_of_url(url).category
            if categories[url] != VALUABLE:
                continue
            if not accepted.get(url):
                accepted[url] = runtime.judge(url, source)[1] is None
    rejected = sum(1 for ok in accepted.values() if not ok)
    return {"valuable_links": len(accepted), "rejected": rejected,
            "share": rejected / len(accepted) if accepted else 0.0}


def model_judgement(folder: Path, web: SocialWeb, lab: Census) -> dict[str, Any]:
    """AT-35 and the mapping accuracy on unseen valuable URLs, from the model, its sample and the ground truth.

    A cluster's page type and category are the majority among its training URLs (the
    paper's clusters were labelled by hand, per cluster). A valuable cluster survives if
    pruning kept it; an unseen valuable URL maps correctly if it maps to a surviving cluster
    whose type is its own type.
    """
    from frontier.clustergraph.patterns import Mapper
    from frontier.clustergraph.train import read_sample
    from frontier.clustergraph.urls import normalise

    model = Model.load(folder)
    runtime = ClusterFilter.from_model(model)
    every = Mapper(model.itemsets, model.nodes, (), model.params.strict_nesting)
    sample = [record.url for record in read_sample(folder / "sample.jsonl") if 200 <= record.status < 300]
    types: dict[str, Counter[str]] = {}
    categories: dict[str, Counter[str]] = {}
    for url in sample:
        cluster = every.classify(normalise(url))[0]
        if cluster is not None:
            truth = web.truth_of_url(url)
            types.setdefault(cluster, Counter())[truth.type] += 1
            categories.setdefault(cluster, Counter())[truth.category] += 1
    surviving = set(model.survivors)
    valuable = sorted(c for c, counts in categories.items() if counts.most_common(1)[0][0] == VALUABLE)
    kept = [c for c in valuable if c in surviving]
    cluster_type = {c: counts.most_common(1)[0][0] for c, counts in types.items()}
    seen = {normalise(url) for url in sample}
    unseen = [u for u in lab.urls if normalise(u) not in seen and web.truth_of_url(u).category == VALUABLE]
    right = sum(1 for u in unseen if cluster_type.get(runtime.cluster(u) or "") == web.truth_of_url(u).type)
    return {
        "clusters": len(model.nodes),
        "surviving": len(surviving),
        "kept_edges": sum(1 for e in model.edges if e.kept),
        "deleted": dict(Counter(model.deleted.values())),
        "valuable_clusters": len(valuable),
        "valuable_clusters_lost": [c for c in valuable if c not in surviving],
        "valuable_surviving_share": len(kept) / len(valuable) if valuable else 1.0,
        "unseen_valuable_urls": len(unseen),
        "mapping_correct_share": right / len(unseen) if unseen else 1.0,
        "unreachable": list(model.unreachable),
        "warnings": list(model.warnings),
    }


def evaluate(variant: Variant, folder: Path, budgets: Sequence[int], train_pages: int,
             learn_settings: Sequence[str], crawl_settings: Sequence[str], reuse: bool = False) -> dict[str, Any]:
    folder.mkdir(parents=True, exist_ok=True)
    trained = learn(variant, folder / "learn", "clustergraph", train_pages, learn_settings, reuse)
    result: dict[str, Any] = {"site": variant.site, "seed": variant.seed, "dialect": variant.dialect,
                              "label": variant.label, "training_downloads": trained["downloads"],
                              "training_cpu_seconds": trained["cpu_seconds"],
                              "training_measures": training_measures(trained["model"]), "budgets": {}}
    web = SocialWeb(variant.params(), SCORING_PORT)
    lab = census(web.site_named(variant.site))
    categories: dict[str, str] = {}  # URL → truth category, shared by every crawl of the site: truth costs a page
    for budget in budgets:
        runs: dict[str, Any] = {}
        for method in METHODS:
            records, stats = crawl(variant, folder / f"{method}-{budget}", budget,
                                   policy_args(method, trained["model"]), crawl_settings, reuse)
            runs[method] = {"records": records, "stats": stats}
        scored = {}
        runtime = ClusterFilter.from_model(Model.load(trained["model"]))
        seeds = web.seeds_of(variant.site)
        bfs_misses = filter_misses(runs["d"]["records"], web, runtime, seeds, categories)
        for method in METHODS:
            s = score(runs[method]["records"], web, variant.site, baseline=runs["d"]["records"], census=lab).as_dict()
            s["missed_vs_bfs"] = s.pop("fn")  # coverage: BFS's valuable keys this crawl did not reach in its budget
            own = filter_misses(runs[method]["records"], web, runtime, seeds, categories) if method != "d" else None
            scored[method] = {**s, **operation_counts(runs[method]["stats"]),
                              "fn": bfs_misses["share"] if method != "d" else 0.0,
                              "fn_own_crawl": own["share"] if own else 0.0,
                              "clusters": runs[method]["stats"].get("policy", {}).get("cluster_pages", {})}
        result["budgets"][str(budget)] = scored
    result["model"] = model_judgement(trained["model"], web, lab)
    return result


def print_table(result: dict[str, Any]) -> None:
    print(f"== {result['label']}: training downloads {result['training_downloads']}, model {result['model']}")
    print(f"{'budget':>6} {'method':>6} {'valuable':>9} {'FP':>6} {'FN':>6} {'FNown':>6} {'missed':>6} {'dup':>6} "
          f"{'uninf':>6} {'links':>8} {'dup_lookups':>11} {'filter':>8}")
    for budget, scored in result["budgets"].items():
        for method, s in scored.items():
            print(f"{budget:>6} {method:>6} {s['valuable_share']:9.3f} {s['fp']:6.3f} {s['fn']:6.3f} "
                  f"{s['fn_own_crawl']:6.3f} {s['missed_vs_bfs']:6.3f} {s['duplicate']:6d} {s['uninformative']:6d} {s['links']:8d} {s['dup_lookups']:11d} "
                  f"{s['filter_calls']:8d}")


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    lab_arguments(parser, "clustergraph_eval")
    parser.add_argument("--budgets", default="2000,5000", help="comma-separated page budgets")
    parser.add_argument("--train-pages", type=int, default=2000, help="downloads of the training sample")
    parser.add_argument("--learn-set", action="append", default=[], help="--set for crawl learn (a Params field)")
    args = parser.parse_args(argv)
    budgets = [int(b) for b in args.budgets.split(",")]
    learn_settings = [x for s in args.learn_set for x in ("--set", s)]
    at_start = machine()
    results = each_variant(args, lambda variant, folder: evaluate(variant, folder, budgets, args.train_pages,
                                                                  learn_settings, args.set, args.reuse), print_table)
    output = {"budgets": budgets, "train_pages": args.train_pages, "sites": results, "machine": at_start}
    write_result(args.json, output)
    from bench.plots import clustergraph_eval

    clustergraph_eval(output, args.plot)


if __name__ == "__main__":
    main()
