"""What an IP lease of the machine-wide IP table costs while the agents hold many (issue 18).

Role: the figure behind ``engine/ip_table.py: LOCK_FILES``. An agent holds the record lock of an
IP's slot for every host on its todo ring or in flight, and the kernel walks the list of a
file's record locks at every lock and unlock, so one lock file makes each lease dearer as the
agents hold more. This starts a second process that takes ``--held`` leases and keeps them (the
other agent), takes ``--held`` of its own, then times ``--leases`` leases taken and given back
(``try_acquire`` then ``release`` of IPs nobody holds), with the locks in one file and in
``LOCK_FILES``; CPU of this process per lease, least of ``--rounds``.

    python -m bench.ip_lock_bench --held 0 1000 3000
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from engine import ip_table
from engine.ip_table import SharedIpTable

HOLDER = """
import sys
from pathlib import Path
from engine import ip_table
ip_table.LOCK_FILES = int(sys.argv[3])
table = ip_table.SharedIpTable(Path(sys.argv[1]))
for k in range(int(sys.argv[2])):
    table.try_acquire(f"10.1.{k // 256}.{k % 256}", 0.0, 0.0)  # a colliding IP holds one fewer
print("held", flush=True)
sys.stdin.read()
"""


def lease_cost(held: int, files: int, leases: int, rounds: int) -> float:
    """Least CPU µs per lease taken and given back, ``held`` leases kept by each of two processes."""
    ip_table.LOCK_FILES = files
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "ip-table"
        SharedIpTable.create(path)
        holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(path), str(held), str(files)],
                                  stdin=subprocess.PIPE, stdout=subprocess.PIPE, cwd=Path(__file__).parent.parent)
        try:
            assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
            table = SharedIpTable(path)
            for k in range(held):
                table.try_acquire(f"10.2.{k // 256}.{k % 256}", 0.0, 0.0)
            best = float("inf")
            for r in range(rounds):
                ips = [f"10.{3 + r}.{k // 256}.{k % 256}" for k in range(leases)]
                started = time.process_time()
                for ip in ips:
                    table.try_acquire(ip, 0.0, 0.0)
                    table.release(ip, 0.0)
                best = min(best, (time.process_time() - started) / leases * 1e6)
            table.close()
        finally:
            holder.kill()
            holder.wait()
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--held", type=int, nargs="+", default=[0, 1000, 3000], help="leases each process keeps")
    parser.add_argument("--leases", type=int, default=20_000)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    shipped = ip_table.LOCK_FILES
    print(f"{'held by each':>12} {'1 lock file':>12} {f'{shipped} lock files':>14}   (CPU µs per lease)")
    for held in args.held:
        one = lease_cost(held, 1, args.leases, args.rounds)
        spread = lease_cost(held, shipped, args.leases, args.rounds)
        print(f"{held:>12} {one:>12.2f} {spread:>14.2f}")


if __name__ == "__main__":
    main()
