"""The ``crawl`` command: ``crawl run`` crawls, ``crawl learn`` trains a policy's model, ``crawl rank``
ranks a crawl's hosts (``engine/rank_cli.py``), ``crawl fresh schedule`` plans a recrawl of
social-network users (``engine/fresh_cli.py``), ``crawl status`` shows the machines of a crawl
over several (``engine/cluster_status.py``), ``crawl stats`` adds up their ``stats.json``
(``engine/cluster_stats.py``), ``crawl report`` writes an HTML report of a crawl's output folder
(``engine/report_cli.py``), ``crawl invitro`` serves the in-vitro web.

The composition root: it reads the command line and crawl.toml into a
:class:`~engine.config.Config` and hands it to the supervisor (``engine/supervisor.py``).
With no seeds, ``crawl run`` is the demo crawl of the in-vitro web, which
``engine/demo.py`` sets up (the one other module that may import ``bench``).
Configuration errors print one line naming the key and exit 2.
"""

from __future__ import annotations

import argparse
import sys
from contextlib import ExitStack
from pathlib import Path
from typing import NoReturn

import orjson

from engine import config as configuration
from engine import cluster_stats, cluster_status, fresh_cli, report_cli
from engine.config import Config, ConfigError


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        sys.stderr.write(f"crawl: error: {message}\n")
        raise SystemExit(2)


def alpha_value(text: str) -> float:
    """``--alpha``: the damping factor, strictly between 0 and 1."""
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"the damping factor must be a number strictly between 0 and 1, not {text!r}")
    return value


def top_value(text: str) -> int:
    """``--top``: how many nodes to show, 0 or more."""
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be a whole number of nodes, 0 or more, not {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="crawl", description="A BUbiNG-style polite web crawler.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    run = commands.add_parser("run", help="crawl (the in-vitro web when no seeds are given)")
    run.add_argument("-c", "--config", type=Path, help="a crawl.toml file; built-in defaults are those listed in crawl.toml")
    run.add_argument("--seeds", type=Path, help="file of seed URLs, one per line (# starts a comment)")
    run.add_argument("--out", help="output folder (store.dir)")
    run.add_argument("--proxy", help="HTTP proxy URL (network.proxy)")
    run.add_argument("--dns", help="DNS server HOST:PORT (dns.servers)")
    run.add_argument("--max-pages", type=int, help="stop after N pages (engine.max_pages)")
    run.add_argument("--max-seconds", type=float, help="stop after S seconds (engine.max_seconds)")
    run.add_argument("--control", metavar="HOST:PORT", help="serve the control API there (control.listen)")
    run.add_argument("--processes", type=int, help="agent processes (engine.processes; 0 = one per core)")
    run.add_argument("--policy", metavar="NAME", help="crawl policy (policy.name)")
    run.add_argument("--model", metavar="PATH", help="the policy's model file (policy.model)")
    run.add_argument("--target-example", action="append", metavar="URL",
                     help="a page of the wanted type, for --policy source-target (policy.target_examples; "
                          "repeat it for a type with several layouts)")
    run.add_argument("--cluster", metavar="nats://HOST:PORT",
                     help="join a crawl over several machines through this NATS JetStream server (cluster.url)")
    run.add_argument("--node", metavar="NAME", help="this machine's name in the crawl over machines (cluster.node)")
    run.add_argument("--cluster-size", type=int, metavar="K",
                     help="the number of machines of the crawl, waited for before crawling (cluster.size)")
    run.add_argument("--resume", action="store_true",
                     help="continue the crawl in the output folder (after a stop, a crash or a reboot); "
                          "starts a new one if the folder holds none")
    run.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="override a crawl.toml key")
    learn = commands.add_parser("learn", help="train a crawl policy's model by a sampling crawl of one site, "
                                              "or the host quality model from a crawl")
    learn.add_argument("method", choices=["clustergraph", "source", "quality"],
                       help="what to learn: clustergraph (engine/learn.py), source (engine/learn_source.py) or "
                            "quality (engine/learn_quality.py: from --crawl and --labels, no fetching)")
    learn.add_argument("-c", "--config", type=Path, help="a crawl.toml file (network, dns, politeness, robots, scope)")
    learn.add_argument("--seeds", type=Path, help="file of seed URLs of one site, one per line (clustergraph, source)")
    learn.add_argument("--out", type=Path, required=True, metavar="MODEL_DIR", help="folder of the model and its sample")
    learn.add_argument("--labels", type=Path, metavar="HOSTS_CSV", help="quality: host,label[,kind] lines, 1 = spam")
    learn.add_argument("--crawl", type=Path, metavar="OUT_DIR", help="quality: the output folder of an earlier crawl")
    learn.add_argument("--pages", type=int, default=100, help="quality: the first N HTML pages of each host (default 100)")
    learn.add_argument("--read", type=int, default=20,
                       help="quality: how many of those N pages are read, evenly spread (default 20; a crawl reads "
                            "as many: its cost per host is bounded by it)")
    learn.add_argument("--classifier", choices=["auto", "forest", "logistic"], default="auto",
                       help="quality: the classifier kept; auto: the better cross-validated AUC (a tie: logistic)")
    learn.add_argument("--proxy", help="HTTP proxy URL (network.proxy)")
    learn.add_argument("--dns", help="DNS server HOST:PORT (dns.servers)")
    learn.add_argument("--max-pages", type=int, help="page downloads of the sampling crawl (robots.txt not counted)")
    learn.add_argument("--from-sample", type=Path, metavar="FILE", help="retrain from a saved sample.jsonl, offline")
    learn.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                       help="a model parameter (tau=0.5), or a crawl.toml key (politeness.host_delay=1)")
    rank = commands.add_parser("rank", help="PageRank, CheiRank and 2DRank of a crawl's host (or page) graph")
    rank.add_argument("out_dir", type=Path, metavar="OUT_DIR", help="a crawl's output folder (or its warc/ folder)")
    rank.add_argument("--graph", choices=["host", "page"], default="host",
                      help="rank hosts (a → b if a page of a links to a page of b; default) or pages")
    rank.add_argument("--alpha", type=alpha_value, default=0.85, help="damping factor α (default 0.85)")
    rank.add_argument("--top", type=top_value, default=0, metavar="N",
                      help="print the top N nodes by PageRank, CheiRank and 2DRank")
    rank.add_argument("--out", metavar="FILE.csv",
                      help="where the CSV goes (default OUT_DIR/rank-host.csv or rank-page.csv; - for stdout)")
    rank.add_argument("--plot", type=Path, metavar="FILE.svg", help="write the (K, K*) density plot as SVG")
    fresh_cli.add_parser(commands)
    cluster_status.add_parser(commands)
    cluster_stats.add_parser(commands)
    report_cli.add_parser(commands)
    invitro = commands.add_parser("invitro", help="serve the in-vitro web and its DNS on loopback", add_help=False)
    invitro.add_argument("args", nargs=argparse.REMAINDER)
    return parser


def read_seeds(path: Path) -> list[str]:
    try:
        lines = path.read_text().splitlines()
    except OSError as e:
        raise ConfigError("--seeds", f"cannot read {path}: {e.strerror}") from None
    return [line.strip() for line in lines if line.strip() and not line.lstrip().startswith("#")]


def overrides(args: argparse.Namespace) -> list[str]:
    """The ``section.key=value`` assignments of ``crawl run``'s flags, then its ``--set``s (which win)."""
    assignments = list(args.set)
    flags = {
        "store.dir": args.out,
        "network.proxy": args.proxy,
        "engine.max_pages": args.max_pages,
        "engine.max_seconds": args.max_seconds,
        "engine.processes": args.processes,
        "control.listen": args.control,
        "policy.name": args.policy,
        "policy.model": args.model,
        "policy.target_examples": args.target_example,
        "cluster.url": args.cluster,
        "cluster.node": args.node,
        "cluster.size": args.cluster_size,
    }
    for key, value in flags.items():
        if value is not None:
            assignments.insert(0, f"{key}={orjson.dumps(value).decode()}")
    if args.dns is not None:
        assignments.insert(0, f"dns.servers={orjson.dumps([args.dns]).decode()}")
    return assignments


def make_config(args: argparse.Namespace) -> Config:
    return configuration.load(args.config, overrides(args))


def run(args: argparse.Namespace) -> int:
    from engine.cluster import ClusterError
    from engine.credentials import check_spread
    from engine.supervisor import CrawlFolderError, prepare_folder, supervise

    try:
        config = make_config(args)
        seeds = list(config.engine.seeds) + (read_seeds(args.seeds) if args.seeds else [])
        config.store.dir = str(config.out_dir.resolve())
        agents, resuming = prepare_folder(config.out_dir, config.engine.processes, args.resume)
        check_spread(config.credentials, agents)
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    except CrawlFolderError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 2
    with ExitStack() as demo_web:
        if not seeds:
            from engine.demo import in_vitro_web  # here: other commands never load the in-vitro web

            seeds = demo_web.enter_context(in_vitro_web(config))
        from engine.progress import summary_text

        try:
            summary, status = supervise(config, seeds, agents, resuming=resuming)
        except (ClusterError, CrawlFolderError) as e:
            sys.stderr.write(f"crawl: error: {e}\n")
            return 1
        print(summary_text(summary), file=sys.stderr)
        print(f"output: {config.out_dir}/warc (WARC files), {config.out_dir}/stats.json", file=sys.stderr)
    return status  # 0, 1 (an agent kept failing) or 3 (the store is full: engine/supervisor.py)


def learn(args: argparse.Namespace) -> int:
    if args.method == "quality":
        from engine.learn_quality import learn_quality  # here: crawl run never loads the learners

        return learn_quality(args)
    from engine.learn import CLUSTERGRAPH
    from engine.learn import learn as learn_model

    try:
        if args.seeds is None:
            raise ConfigError("--seeds", f"crawl learn {args.method} needs --seeds FILE")
        lines = read_seeds(args.seeds)
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    if args.method == "source":
        from engine.learn_source import SOURCE

        return learn_model(args, lines, SOURCE)
    return learn_model(args, lines, CLUSTERGRAPH)


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["invitro"]:
        from engine.demo import serve

        serve(argv[1:])
    if argv[:1] == ["warc"]:
        from engine.warc_cli import main as warc_main
        return warc_main(argv[1:])
    args = build_parser().parse_args(argv)
    if args.command == "rank":
        from engine.rank_cli import rank_crawl

        return rank_crawl(args)
    if args.command == "fresh":
        return fresh_cli.schedule(args)
    if args.command == "status":
        return cluster_status.status(args)
    if args.command == "stats":
        return cluster_stats.stats(args)
    if args.command == "report":
        return report_cli.report(args)
    return learn(args) if args.command == "learn" else run(args)


if __name__ == "__main__":
    raise SystemExit(main())
