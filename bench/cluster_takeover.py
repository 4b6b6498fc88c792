"""What a machine's departure costs on a larger crawl (issue 17, item 4): kill -9 of one machine of three
after minutes of crawling, and how long its hosts wait.

Three ``crawl run --cluster`` machines (one agent each, the defaults, the cluster TTL as shipped)
crawl one in-vitro web of ``--hosts`` hosts (one per IP) through one nats-server on loopback,
their output folders side by side (the shared storage). After ``--before`` seconds machine b's
whole process tree gets SIGKILL; a and c go on for ``--after`` seconds. Then, by ``--departure``:

* ``adopt`` (the default, as shipped): one survivor runs b's supervisor, resumed from b's folder
  (``engine/adoption.py``). Reported: who adopted it, its agent's resume (seconds, CPU, records of
  the archive replayed since b's last checkpoint), the adopted supervisor's start-up;
* ``take_over``: a survivor's agent takes its share of b's hosts by reading b's archive and its own
  (``engine/takeover.py``), fetching nothing meanwhile, so the cost grows with the pages stored.
  Reported: each survivor's takeover (b's pages it skips, links re-derived, fetches read in all,
  seconds, and so fetches read per second).

Both: from the web's request log the seconds from the kill to the first request to one of b's hosts
(the issue's target: within 30 s), which is the TTL plus the adoption or the takeover; each
machine's memory at its end (``rss_bytes`` of its ``stats.json``: supervisor and agents; b's is the
adopted supervisor's, which runs on its adopter).

    python -m bench.cluster_takeover                   # about 4 minutes; writes bench/cluster_takeover.json
    python -m bench.cluster_takeover --departure take_over
    python -m bench.cluster_takeover --smoke --out /tmp/takeover
"""

from __future__ import annotations

import argparse
import os
import signal
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

import orjson

from bench.cluster_scaling import machine_command
from bench.invitro.requestlog import read_log
from bench.runner import RESULTS_DIR, invitro_web, machine, write_result
from engine.ownership import GlobalRing
from tests.nats_server import nats_server

NODES = ("a", "b", "c")


def one_run(args: argparse.Namespace, folder: Path) -> dict[str, Any]:
    ring = GlobalRing([(node, 1) for node in NODES])
    with invitro_web(folder, args.hosts, ["--hosts-per-ip", "1"], log=True) as web, nats_server(folder / "nats") as server:
        machines = {}
        for node in NODES:
            cmd = machine_command(web, folder / node, args.before + args.after,
                                  ["--cluster", server.url, "--cluster-size", str(len(NODES)), "--node", node,
                                   "--set", f"cluster.departure={args.departure}"])
            with open(folder / f"{node}.stderr", "w") as stderr:
                machines[node] = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=stderr, start_new_session=True)
        try:
            time.sleep(args.before)  # the crawl's length before the kill: what the takeover has to read
            os.killpg(machines["b"].pid, signal.SIGKILL)
            killed = time.monotonic()
            machines["b"].wait(30)
            for node in ("a", "c"):
                if machines[node].wait(args.after + 300) != 0:
                    raise RuntimeError(f"machine {node} failed:\n{(folder / f'{node}.stderr').read_text()[-2000:]}")
        finally:
            for process in machines.values():
                if process.poll() is None:
                    os.killpg(process.pid, signal.SIGKILL)
    log = read_log(web.folder / "requests.jsonl")
    of_b = [r.start for r in log if r.start > killed and r.ip is not None
            and ring.agents_list[ring.owner(r.ip)][0] == "b" and r.target != "/robots.txt"]
    takeovers = {node: [t for path in sorted((folder / node).glob("agent-*/stats.json"))
                        for t in orjson.loads(path.read_bytes()).get("takeovers", [])] for node in ("a", "c")}
    done = [t for node in takeovers.values() for t in node]
    stats = {node: orjson.loads(path.read_bytes()) for node in NODES if (path := folder / node / "stats.json").exists()}
    adopted = stats["b"] if "b" in stats else None  # written by b's adopted supervisor (taken over, b writes none)
    return {"departure": args.departure, "takeovers": takeovers,
            "adopted_by": adopted["cluster"]["adopted_by"] if adopted else None,
            "adoption": {"resumed": [agent["resumed"] for agent in adopted["agents"]],
                         "startup_seconds": adopted["startup_seconds"]} if adopted else None,
            "rss_bytes": {node: s["rss_bytes"] for node, s in stats.items()},
            "fetches_read_per_second": sum(t["read"] for t in done) / max(sum(t["seconds"] for t in done), 1e-9),
            "cpu_us_per_fetch_read": 1e6 * sum(t["cpu_seconds"] for t in done) / max(sum(t["read"] for t in done), 1),
            "seconds_to_first_fetch_of_b_hosts": (min(of_b) - killed) if of_b else None}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--hosts", type=int, default=2000)
    parser.add_argument("--before", type=float, default=60.0, help="seconds of crawl before b is killed")
    parser.add_argument("--after", type=float, default=120.0, help="seconds the survivors go on")
    parser.add_argument("--out", type=Path, default=RESULTS_DIR, help="folder for cluster_takeover.json")
    parser.add_argument("--smoke", action="store_true", help="seconds-long, a small web")
    parser.add_argument("--departure", choices=["adopt", "take_over"], default="adopt", help="cluster.departure")
    args = parser.parse_args()
    if args.smoke:
        args.hosts, args.before, args.after = 60, 6.0, 14.0
    at_start = machine()
    with tempfile.TemporaryDirectory(prefix="cluster-takeover-") as tmp:
        result = one_run(args, Path(tmp))
    for node, done in result["takeovers"].items():
        for t in done:
            print(f"{node}: read {t['read']} fetches in {t['seconds']:.2f} s, {t['cpu_seconds']:.2f} CPU-s "
                  f"({t['skipped']} pages of the archives read skipped, "
                  f"{t['rederived']} links re-derived)")
    if result["adoption"] is not None:
        for resumed in result["adoption"]["resumed"]:
            print(f"b adopted by {result['adopted_by']}: its agent resumed in {resumed['seconds']:.2f} s, "
                  f"{resumed['cpu_seconds']:.2f} CPU-s, {resumed['replayed_records']} records replayed; "
                  f"its supervisor started in {result['adoption']['startup_seconds']:.2f} s")
    elif result["takeovers"]:
        print(f"{result['fetches_read_per_second']:.0f} fetches read per second of takeover, "
              f"{result['cpu_us_per_fetch_read']:.0f} us of CPU per fetch read")
    first = result["seconds_to_first_fetch_of_b_hosts"]
    print(f"first fetch of b's hosts {first if first is None else round(first, 2)} s after the kill; memory at the end: "
          + ", ".join(f"{node} {rss / 1e6:.0f} MB" for node, rss in result["rss_bytes"].items()))
    write_result(args.out / "cluster_takeover.json", result | {"args": vars(args) | {"out": str(args.out)},
                                                               "machine": at_start})


if __name__ == "__main__":
    main()
