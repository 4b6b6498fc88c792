"""The host quality filter on hosts it has never seen: AUC, and the budget a crawl spends on spam.

One command (issue 16, item 4):

1. **train**: an in-vitro web with spam hosts (``--train-seed``), crawled breadth-first to the
   end; its ground truth (``python -m bench.invitro labels``) and ``crawl learn quality``;
2. **judge** on a web of another seed (``--test-seed``: other hosts, other spam):
   a full crawl without the filter, whose hosts the model scores offline on their first
   ``--pages`` pages (the ``--read`` of them the crawl would read) for the AUC against the ground truth; then, for each
   budget (``--budget-share`` of the full crawl's pages: half, and all of it), two crawls, without and with
   ``--set quality.model=…``: the share of the budget spent on spam hosts and the good hosts'
   pages fetched, read from each crawl's WARC files (``bench/spam_budget.py``).

No politeness delays, one agent. Writes ``bench/quality_eval.json`` (``--out`` elsewhere).
``--work DIR`` keeps the crawls in DIR, and a later run with the same DIR and web reuses every
crawl that does not depend on the model (the training crawl, the full test crawl, the crawls
without the filter): only the model and the crawls with it are made again.

    python -m bench.quality_eval [--hosts 400] [--spam-share 0.2] [--pages 2] [--read 20] [--threshold 0.5] [--classifier forest] [--work DIR]
"""

from __future__ import annotations

import argparse
import contextlib
import csv
import shutil
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import orjson
from sklearn.metrics import roc_auc_score

from bench.runner import Web, crawl, invitro_web, machine
from bench.spam_budget import pages_by_kind, read_labels
from engine.learn_quality import read_crawl
from frontier.quality import HostSample
from frontier.quality_model import Model

HERE = Path(__file__).resolve().parent


def web_args(seed: int, spam_share: float, hosts_per_ip: int) -> list[str]:
    return ["--seed", str(seed), "--spam-share", str(spam_share), "--hosts-per-ip", str(hosts_per_ip)]


def ground_truth(folder: Path, hosts: int, args: list[str]) -> tuple[Path, dict[str, str]]:
    """The web's labels through its CLI: the file, and host name → kind ("good" or the spam kind)."""
    path = folder / "hosts.csv"
    subprocess.run([sys.executable, "-m", "bench.invitro", "labels", "--hosts", str(hosts), *args, "--out", str(path)],
                   check=True, capture_output=True)
    return path, read_labels(path)


def budget_figures(out: Path, kinds: dict[str, str]) -> dict[str, Any]:
    """Where a crawl's page responses went (``bench/spam_budget.py``), and what the filter did."""
    counts = pages_by_kind(out, kinds)
    total = sum(counts.values())
    spam = total - counts["good"] - counts["other"]
    stats = orjson.loads((out / "stats.json").read_bytes())
    return {
        "pages": total,
        "by_kind": dict(counts),
        "spam_pages": spam,
        "spam_share": spam / total if total else 0.0,
        "good_pages": counts["good"],
        "stop_reason": stats.get("stop_reason", ""),
        "quality": stats.get("quality", {}),
        "drops": {k: v for k, v in stats["frontier"]["drops"].items() if "quality" in k},
    }


def offline_scores(model_dir: Path, out: Path, kinds: dict[str, str], pages: int) -> dict[str, Any]:
    """The model's score of every labelled host of a crawl, from the pages it reads of their first ``pages``
    (as the crawl reads them), and the AUC."""
    model = Model.load(model_dir)
    crawled = read_crawl(out, {host: int(kind != "good") for host, kind in kinds.items()}, pages, model.read)
    hosts, addresses = crawled.hosts, crawled.addresses
    scores, labels_ = [], []
    for host in hosts:
        sample = HostSample(host.host)
        for page in host.pages:
            model.add_page(sample, page)
        scores.append(model.score(model.vector(sample, host.hosts_per_ip, addresses.get(host.host), addresses.get,
                                               len(addresses))))
        labels_.append(host.label)
    return {"hosts": len(hosts), "spam_hosts": sum(labels_), "auc": float(roc_auc_score(labels_, scores)),
            "scores": {h.host: round(s, 4) for h, s in zip(hosts, scores)}}


def crawl_scores(out: Path, kinds: dict[str, str]) -> dict[str, Any]:
    """The scores a filtered crawl gave as it went (``agent-*/quality.csv``): their AUC, and hosts stopped per kind."""
    scores, labels_ = [], []
    scored: Counter[str] = Counter()
    stopped: Counter[str] = Counter()
    for path in out.glob("agent-*/quality.csv"):
        with path.open(newline="") as f:
            for row in csv.DictReader(f):
                kind = kinds.get(urlsplit(row["host"]).hostname or "", "other")
                scores.append(float(row["score"]))
                labels_.append(int(kind != "good"))
                scored[kind] += 1
                stopped[kind] += row["action"] == "stop"
    auc = float(roc_auc_score(labels_, scores)) if 0 < sum(labels_) < len(labels_) else None
    return {"auc": auc, "scored": dict(scored), "stopped": dict(stopped)}


def crawl_once(web: Web, folder: Path, settings: list[str], reuse: bool) -> dict[str, Any]:
    """The stats.json of a crawl of ``web`` into ``folder/out``: the one there if ``reuse``, else a new crawl."""
    stats = folder / "out" / "stats.json"
    if reuse and stats.exists():
        return dict(orjson.loads(stats.read_bytes()))
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return crawl(web, folder, 900, settings).stats


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=400)
    parser.add_argument("--hosts-per-ip", type=int, default=4)
    parser.add_argument("--spam-share", type=float, default=0.2)
    parser.add_argument("--train-seed", type=int, default=1)
    parser.add_argument("--test-seed", type=int, default=2)
    parser.add_argument("--pages", type=int, default=2, help="pages per host: trained on, and fetched before the score")
    parser.add_argument("--read", type=int, default=20, help="pages read of those, evenly spread (crawl learn quality --read)")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--classifier", default="forest", choices=["auto", "forest", "logistic"],
                        help="crawl learn quality --classifier: both tie at AUC 1.0 here, and the forest's "
                             "scores hold up on the unseen web (bench/RESULTS.md)")
    parser.add_argument("--budget-share", type=float, action="append",
                        help="the budget of a pair of crawls, a share of the full crawl's pages (default: 0.5 and 1)")
    parser.add_argument("--out", type=Path, default=HERE / "quality_eval.json")
    parser.add_argument("--work", type=Path, help="keep the crawls here and reuse those the model does not change")
    args = parser.parse_args(argv)
    args.budget_share = args.budget_share or [0.5, 1.0]
    started = time.monotonic()
    at_start = machine()
    no_delays = ["politeness.host_delay=0", "politeness.ip_delay=0", "engine.fetchers=200"]
    result: dict[str, Any] = {"hosts": args.hosts, "spam_share": args.spam_share, "pages": args.pages, "read": min(args.read, args.pages),
                              "threshold": args.threshold, "train_seed": args.train_seed, "test_seed": args.test_seed}
    with contextlib.ExitStack() as cleanup:
        root = args.work or Path(cleanup.enter_context(tempfile.TemporaryDirectory(prefix="quality-eval-")))
        reuse = args.work is not None
        train_args = web_args(args.train_seed, args.spam_share, args.hosts_per_ip)
        (root / "train").mkdir(parents=True, exist_ok=True)
        labels_file, _ = ground_truth(root / "train", args.hosts, train_args)
        with invitro_web(root / "train" / "server", args.hosts, train_args) as web:
            result["train_crawl_pages"] = crawl_once(web, root / "train" / "crawl", no_delays, reuse)["pages"]
        model_dir = root / "model"
        shutil.rmtree(model_dir, ignore_errors=True)
        learn = subprocess.run(
            [sys.executable, "-m", "engine.cli", "learn", "quality", "--labels", str(labels_file), "--crawl",
             str(root / "train" / "crawl" / "out"), "--out", str(model_dir), "--pages", str(args.pages),
             "--read", str(args.read), "--classifier", args.classifier],
            capture_output=True, text=True, check=True)
        result["learn"] = learn.stderr.strip().splitlines()
        print("\n".join(result["learn"]), flush=True)
        result["report"] = (model_dir / "report.md").read_text()
        test_args = web_args(args.test_seed, args.spam_share, args.hosts_per_ip)
        (root / "test").mkdir(parents=True, exist_ok=True)
        _, truth = ground_truth(root / "test", args.hosts, test_args)
        with invitro_web(root / "test" / "server", args.hosts, test_args) as web:
            full_pages = crawl_once(web, root / "test" / "full", no_delays, reuse)["pages"]
            result["test_full"] = budget_figures(root / "test" / "full" / "out", truth)
            result["offline"] = offline_scores(model_dir, root / "test" / "full" / "out", truth, args.pages)
            result["budgets"] = []
            for share in args.budget_share:
                budget = int(full_pages * share)
                capped = [*no_delays, f"engine.max_pages={budget}"]
                filtered = [*capped, f"quality.model={model_dir}", f"quality.pages={args.pages}",
                            f"quality.threshold={args.threshold}"]
                pair: dict[str, Any] = {"share": share, "budget": budget}
                for name, settings in (("without", capped), ("with", filtered)):
                    folder = root / "test" / f"{name}-{share}"
                    crawl_once(web, folder, settings, reuse and name == "without")
                    pair[name] = budget_figures(folder / "out", truth)
                pair["with"]["scored_in_crawl"] = crawl_scores(root / "test" / f"with-{share}" / "out", truth)
                without, with_ = pair["without"], pair["with"]
                pair["spam_budget_cut"] = 1 - with_["spam_share"] / without["spam_share"] if without["spam_share"] else 0.0
                pair["good_pages_ratio"] = with_["good_pages"] / without["good_pages"] if without["good_pages"] else 0.0
                result["budgets"].append(pair)
    result["machine"] = {"at_start": at_start, "at_end": machine()}
    result["seconds"] = time.monotonic() - started
    args.out.write_bytes(orjson.dumps(result, option=orjson.OPT_INDENT_2))
    print(f"AUC on the unseen web's hosts: {result['offline']['auc']:.4f} "
          f"({result['offline']['hosts']} hosts, {result['offline']['spam_hosts']} spam)")
    for pair in result["budgets"]:
        without, with_ = pair["without"], pair["with"]
        print(f"budget {pair['budget']} pages ({pair['share']:g} of the full crawl): spam share without "
              f"{without['spam_share']:.3f}, with {with_['spam_share']:.3f} ({pair['spam_budget_cut']:.1%} less); "
              f"good pages without {without['good_pages']}, with {with_['good_pages']} "
              f"(ratio {pair['good_pages_ratio']:.3f}); scored in the crawl: {pair['with']['scored_in_crawl']}")
    print(f"written: {args.out}")


if __name__ == "__main__":
    main()
