"""pywb for the replay tests: its own virtual environment, a server on loopback, the records to replay.

pywb 2.10 cannot share the crawler's environment: it requires ``brotlipy``, whose module is also
named ``brotli`` and would replace the ``brotli`` 1.2 the crawler needs (its output limit bounds
decompression bombs, ``engine/content.py``), and it pins ``pyOpenSSL<26.2`` and
``cryptography<48`` below what the rest of the environment has. So it gets a virtual environment
of its own, ``.venv-pywb/`` at the top of the repository (gitignored), made on first use from the
configured package index and kept while it holds the right version.

pywb and its tools run on loopback only: the server binds 127.0.0.1, and outward HTTP from them
goes to a proxy address on loopback that nothing listens on. A collection is either indexed by
pywb's own tools (``wb-manager init`` and ``add``) or points at an index pywb is given as it is
(``index_paths``: the crawl's CDXJ files, or a WACZ's ``indexes/``), with the WARC files beside.
"""

from __future__ import annotations

import fcntl
import http.client
import os
import socket
import subprocess
import sys
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from store.cdxj import timestamp14

ROOT = Path(__file__).resolve().parent.parent
PYWB = "2.10"
VENV = ROOT / ".venv-pywb"
# Every coding a stored payload has (a hostile host sends br unasked): pywb then serves each payload as
# stored, where for a client that does not accept its coding it would decode it.
ACCEPT_ENCODING = "gzip, deflate, br"


def pywb_env() -> dict[str, str]:
    """pywb's environment: outward HTTP goes to a closed loopback port, its own loopback hop does not."""
    closed = "http://127.0.0.1:9"  # discard: nothing listens, so an attempt fails at once and locally
    return {**os.environ, "HTTP_PROXY": closed, "HTTPS_PROXY": closed, "http_proxy": closed, "https_proxy": closed,
            "NO_PROXY": "localhost,127.0.0.1", "no_proxy": "localhost,127.0.0.1"}


def pywb_venv() -> Path:
    """``.venv-pywb`` with pywb 2.10, made once (under a lock, for parallel runs) and reused after."""
    with open(ROOT / ".venv-pywb.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        python = VENV / "bin" / "python"
        probe = [str(python), "-c", "import importlib.metadata as m; print(m.version('pywb'))"]
        if python.exists() and subprocess.run(probe, capture_output=True, text=True).stdout.startswith(PYWB + "."):
            return VENV
        subprocess.run([sys.executable, "-m", "venv", "--clear", str(VENV)], check=True, timeout=120)
        pip = subprocess.run([str(python), "-m", "pip", "install", "-q", f"pywb=={PYWB}.*"],
                             capture_output=True, text=True, timeout=600)
        if pip.returncode:
            pytest.skip(f"cannot install pywb {PYWB} into {VENV}: {pip.stderr.strip()[-500:]}")
        return VENV


@dataclass(frozen=True)
class Capture:
    url: str
    timestamp: str
    kind: str  # response or revisit
    status: int
    digest: str  # the payload replay must serve: the record's, or for a revisit its original's
    length: int  # bytes of that payload
    profile: str | None
    truncated: bool  # WARC-Truncated: the payload is the body as far as it was kept
    mime: str  # the Content-Type of the payload's record (for a revisit, its original's), without parameters


def captures(warc: Path) -> list[Capture]:
    """Every response and revisit record of the crawl, read back with warcio."""
    found: list[tuple[object, str, str | None]] = []
    payloads: dict[str, tuple[str, int, str]] = {}  # record id → payload digest, length and media type
    for path in sorted(warc.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                if record.rec_type not in ("response", "revisit"):
                    continue
                h = record.rec_headers
                length = len(record.raw_stream.read())  # as stored: no content-coding undone
                mime = (record.http_headers.get_header("Content-Type") or "").split(";")[0].strip().lower()
                payloads[h.get_header("WARC-Record-ID")] = (h.get_header("WARC-Payload-Digest"), length, mime)
                found.append((record, h.get_header("WARC-Refers-To"), h.get_header("WARC-Profile")))
    out = []
    for record, refers_to, profile in found:
        h = record.rec_headers  # type: ignore[attr-defined]
        digest, length, mime = payloads[refers_to or h.get_header("WARC-Record-ID")]
        out.append(Capture(h.get_header("WARC-Target-URI"), timestamp14(h.get_header("WARC-Date")), record.rec_type,  # type: ignore[attr-defined]
                           int(record.http_headers.get_statuscode()), digest, length, profile,  # type: ignore[attr-defined]
                           h.get_header("WARC-Truncated") is not None, mime))
    return out


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def get(port: int, path: str, limit: int | None = None) -> tuple[int, dict[str, str], bytes]:
    """One GET on loopback; the body as sent (http.client undoes no content-coding), its first
    ``limit`` bytes if given."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    try:
        conn.request("GET", path, headers={"Accept-Encoding": ACCEPT_ENCODING})
        response = conn.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read(limit)
    finally:
        conn.close()


def wait_until_serving(server: subprocess.Popen[bytes], port: int, timeout: float) -> None:
    """Poll the server's front page until it answers, the server exits, or ``timeout`` passes."""
    for _ in range(int(timeout / 0.1)):
        try:
            if get(port, "/")[0] == 200:
                return
        except OSError:
            pass
        try:
            server.wait(0.1)  # the pause between polls, which also notices a server that died
        except subprocess.TimeoutExpired:
            continue
        raise AssertionError(f"wayback exited with status {server.returncode}")
    raise AssertionError(f"wayback did not answer on 127.0.0.1:{port} within {timeout} s")


@contextmanager
def wayback(root: Path, *, indexed: Mapping[str, Sequence[Path]] = {},
            given: Mapping[str, tuple[Path, Path]] = {}) -> Iterator[int]:
    """A pywb server on a free loopback port, run in ``root``, yielding its port. ``indexed``: collections
    that ``wb-manager`` makes and indexes from WARC files; ``given``: collections read through an index
    folder as it is, with the folder of their WARC files."""
    bin_dir = pywb_venv() / "bin"
    env = pywb_env()
    for name, warcs in indexed.items():
        subprocess.run([str(bin_dir / "wb-manager"), "init", name], cwd=root, env=env, check=True,
                       capture_output=True, timeout=120)
        subprocess.run([str(bin_dir / "wb-manager"), "add", name, *map(str, warcs)],
                       cwd=root, env=env, check=True, capture_output=True, timeout=300)
    (root / "config.yaml").write_text("collections:\n" + "".join(
        f"  {name}:\n    index_paths: {index}/\n    archive_paths: {archive}/\n" for name, (index, archive) in given.items()))
    port = free_port()
    with open(root / "wayback.log", "wb") as log:
        server = subprocess.Popen([str(bin_dir / "wayback"), "--bind", "127.0.0.1", "--port", str(port)],
                                  cwd=root, env=env, stdout=log, stderr=subprocess.STDOUT)
        try:
            wait_until_serving(server, port, timeout=60)
            yield port
        finally:
            server.terminate()
            server.wait(30)
