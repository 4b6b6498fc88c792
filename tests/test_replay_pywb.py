"""Replay in pywb: every response and revisit of a crawl with duplicates and near-duplicates serves its payload.

The crawl runs over the in-vitro web with ``store.dedup = "near"``, on hosts that serve copies of
some pages byte for byte (``?mirror=k``, ``?utm_source=…``) and near-copies that differ in one
number (``?edition=k``), and on a few hostile hosts (decompression bombs and a big page, stored
cut; a body that is not the gzip it claims). Its WARC files are then opened in pywb, the replay
tool archivists use, twice: as a collection pywb indexes itself (``wb-manager add``), and through
the crawl's own CDXJ indexes. For every response and revisit record, ``/COLL/TIMESTAMPid_/URL``
(``id_``: the original bytes, nothing rewritten) must answer the record's HTTP status with exactly
the payload the record's digest names (for a revisit: the payload of the record it refers to),
and a Content-Length that agrees, but for a body cut at the limit: its record keeps the HTTP head
it came with (``WARC-Truncated``), so pywb announces the whole body's length and sends the part
the record holds.

pywb pins old libraries, so it gets a virtual environment of its own, ``.venv-pywb/`` at the top
of the repository (gitignored), made on first use and kept while it holds the right version.
pywb and its tools run on loopback only: the server binds 127.0.0.1, and outward HTTP from them
goes to a proxy address on loopback that nothing listens on.
"""

from __future__ import annotations

import fcntl
import http.client
import os
import socket
import subprocess
import sys
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from bench.invitro import WebParams
from store.archive import NEAR_DUPLICATE_FIELD
from store.cdxj import timestamp14
from store.recovery import metadata_fields
from store.warc import PROFILE_IDENTICAL, payload_digest
from tests.invitro_harness import WebThread, run_crawl

ROOT = Path(__file__).resolve().parent.parent
PYWB = "2.10"
VENV = ROOT / ".venv-pywb"
WEB = WebParams(hosts=12, hosts_per_ip=4, mean_pages=10, max_pages=24, mean_links=10, page_bytes=3000,
                duplicate_share=0.4, duplicate_copies=2, robots_5xx_share=0.0,
                hostile_share=0.5, bomb_bytes=1 << 22, big_bytes=1 << 19)  # bodies cut, bad codings: replayed too
LIMIT = 65536  # network.max_body_bytes: the bombs and the big page are stored cut (WARC-Truncated)
COLLECTIONS = ("indexed", "crawlcdxj")  # pywb's own index of the WARC files; the crawl's CDXJ files
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


def captures(warc: Path) -> list[Capture]:
    """Every response and revisit record of the crawl, read back with warcio."""
    found: list[tuple[object, str, str | None]] = []
    payloads: dict[str, tuple[str, int]] = {}  # record id → payload digest and length
    for path in sorted(warc.glob("*.warc.gz")):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f, check_digests="raise"):
                if record.rec_type not in ("response", "revisit"):
                    continue
                h = record.rec_headers
                length = len(record.raw_stream.read())  # as stored: no content-coding undone
                payloads[h.get_header("WARC-Record-ID")] = (h.get_header("WARC-Payload-Digest"), length)
                found.append((record, h.get_header("WARC-Refers-To"), h.get_header("WARC-Profile")))
    out = []
    for record, refers_to, profile in found:
        h = record.rec_headers  # type: ignore[attr-defined]
        digest, length = payloads[refers_to or h.get_header("WARC-Record-ID")]
        out.append(Capture(h.get_header("WARC-Target-URI"), timestamp14(h.get_header("WARC-Date")), record.rec_type,  # type: ignore[attr-defined]
                           int(record.http_headers.get_statuscode()), digest, length, profile,  # type: ignore[attr-defined]
                           h.get_header("WARC-Truncated") is not None))
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


@pytest.fixture(scope="module")
def crawl(tmp_path_factory: pytest.TempPathFactory) -> Path:
    tmp = tmp_path_factory.mktemp("replay")
    web = WebThread(WEB, tmp / "requests.jsonl")
    seeds = web.model.seeds(WEB.hosts)
    try:
        result = run_crawl(tmp / "out", seeds, dns=web.web.dns_address,
                           settings=["engine.processes=1", "politeness.host_delay=0.02", "politeness.ip_delay=0",
                                     "engine.fetchers=30", f"network.max_body_bytes={LIMIT}", 'store.dedup="near"'])
    finally:
        web.stop()
    assert result.stats["stop_reason"] == "done", result.process.stderr[-3000:]
    return result.out / "warc"


@pytest.fixture(scope="module")
def wayback(crawl: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[int]:
    """A pywb server on a free loopback port with both collections of the crawl."""
    bin_dir = pywb_venv() / "bin"
    root = tmp_path_factory.mktemp("pywb")
    env = pywb_env()
    subprocess.run([str(bin_dir / "wb-manager"), "init", COLLECTIONS[0]], cwd=root, env=env, check=True,
                   capture_output=True, timeout=120)
    subprocess.run([str(bin_dir / "wb-manager"), "add", COLLECTIONS[0], *map(str, sorted(crawl.glob("*.warc.gz")))],
                   cwd=root, env=env, check=True, capture_output=True, timeout=300)
    (root / "config.yaml").write_text(
        f"collections:\n  {COLLECTIONS[1]}:\n    index_paths: {crawl}/\n    archive_paths: {crawl}/\n"
    )
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


def test_the_crawl_has_identical_revisits_and_near_duplicates(crawl: Path) -> None:
    found = captures(crawl)
    assert sum(c.truncated for c in found) >= 3
    kinds = Counter((c.kind, c.profile) for c in found)
    assert kinds[("revisit", PROFILE_IDENTICAL)] >= 5, kinds
    assert set(kinds) <= {("response", None), ("revisit", PROFILE_IDENTICAL)}, kinds
    near = 0
    for path in crawl.glob("*.warc.gz"):
        with open(path, "rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type == "metadata":
                    near += any(n == NEAR_DUPLICATE_FIELD for n, _ in metadata_fields(record.content_stream().read()))
    assert near >= 5, "near-duplicates, stored as responses, are replayed too"


@pytest.mark.parametrize("collection", COLLECTIONS)
def test_every_response_and_revisit_replays_its_payload_byte_for_byte(crawl: Path, wayback: int,
                                                                       collection: str) -> None:
    records = captures(crawl)
    failures = []
    for c in records:
        # a body cut at the limit: pywb announces the whole body's Content-Length, so read what the record has
        try:
            status, headers, body = get(wayback, f"/{collection}/{c.timestamp}id_/{c.url}", c.length if c.truncated else None)
        except (http.client.HTTPException, OSError) as e:
            failures.append(f"{c.kind} {c.url}: {type(e).__name__}: {e}")
            continue
        if status != c.status or payload_digest(body) != c.digest:
            failures.append(f"{c.kind} {c.url}: {status}, {len(body)} bytes ({payload_digest(body)}), want {c.status} {c.digest}")
        elif not c.truncated and "content-length" in headers and int(headers["content-length"]) != len(body):
            failures.append(f"{c.kind} {c.url}: Content-Length {headers['content-length']} for {len(body)} bytes")
    assert not failures, f"{len(failures)} of {len(records)} captures do not replay:\n" + "\n".join(failures[:20])
