"""``crawl learn quality``: train the host quality filter's model from a finished crawl and labelled hosts.

Unlike the other learners it fetches nothing: it reads the WARC files of an earlier crawl
(``--crawl OUT_DIR``: its ``warc/`` folder, or a folder of WARC files) with warcio, in file
order (an agent's files by serial, so a host's pages in the order they were fetched), and
``--labels hosts.csv`` (``host,label[,kind]``, label 1 = spam, 0 = good; a header line is
allowed). A label's host is a host name (``h00017.web.test``, any port) or ``host:port``
(that authority only); a ``scheme://`` prefix is ignored. Per labelled host, the first
``--pages`` (default 100) 200 HTML responses are counted and ``--read`` (default 20) of them,
evenly spread (``frontier.quality.reads_page``), are read as the crawl reads them
(``engine/quality_text.py``, their links by ``engine/parse.py`` with the default link rules);
hosts per IP count the distinct hosts of every record of the crawl with that
``WARC-IP-Address``, and the same addresses tell which linked hosts share a host's IP. Labelled hosts without pages in the crawl are counted
and left out. Training is ``frontier/quality_train.py``. Writes ``MODEL_DIR/model.json`` (and
``forest.npz`` for a forest) and ``MODEL_DIR/report.md``; no pickle, so a crawl loads no code
from the model.
"""

from __future__ import annotations

import argparse
import csv
import sys
import time
from collections import Counter, defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator

from engine.config import ConfigError
from engine.parse import HTML_TYPES, extract_links
from engine.quality_text import page_text
from frontier.quality import PageText, reads_page
from frontier.quality_train import LabelledHost, report, train
from frontier.urls import split


def read_labels(path: Path) -> dict[str, int]:
    """``host → label`` of a labels file; ConfigError naming ``--labels`` if it is not one."""
    labels: dict[str, int] = {}
    try:
        with path.open(newline="", encoding="utf-8") as f:
            for number, row in enumerate(csv.reader(f), 1):
                if not row or not row[0].strip() or row[0].startswith("#"):
                    continue
                if number == 1 and row[0].strip().lower() == "host":
                    continue
                if len(row) < 2 or row[1].strip() not in ("0", "1"):
                    raise ConfigError("--labels", f"{path}:{number}: expected host,label with label 0 or 1, got {row!r}")
                host = row[0].strip().lower().rstrip("/")
                labels[host.partition("://")[2] or host] = int(row[1])
    except OSError as e:
        raise ConfigError("--labels", f"cannot read {path}: {e.strerror}") from None
    if not labels:
        raise ConfigError("--labels", f"{path} labels no host")
    return labels


def warc_files(folder: Path) -> list[Path]:
    """The crawl's finished and open WARC files, in name order (per agent, by serial)."""
    where = folder / "warc" if (folder / "warc").is_dir() else folder
    files = sorted(p for p in where.glob("*.warc.gz*") if p.name.endswith((".warc.gz", ".warc.gz.open")))
    if not files:
        raise ConfigError("--crawl", f"no WARC files in {where}")
    return files


def _label_of(scheme_authority: str, labels: dict[str, int]) -> int | None:
    authority = scheme_authority.partition("://")[2]
    label = labels.get(authority)
    return label if label is not None else labels.get(authority.rpartition(":")[0] if ":" in authority else authority)


@dataclass(frozen=True, slots=True)
class Crawled:
    """What a crawl's WARC files give the learner."""

    hosts: list[LabelledHost]  # the labelled hosts with pages in the crawl
    addresses: dict[str, str]  # scheme://authority → IP, of every host with a response
    records: int  # response records read


def read_crawl(folder: Path, labels: dict[str, int], pages: int, read: int) -> Crawled:
    """The labelled hosts of the crawl in ``folder`` with the ``read`` pages read of their first ``pages``,
    and every host's IP."""
    texts: dict[str, list[PageText]] = defaultdict(list)
    seen: Counter[str] = Counter()
    host_ip: dict[str, str] = {}
    hosts_of_ip: dict[str, set[str]] = defaultdict(set)
    records = 0
    for url, ip, payload, content_type in _pages(folder):
        records += 1
        host = split(url)[0]
        if ip:
            hosts_of_ip[ip].add(host)
            host_ip.setdefault(host, ip)
        if payload is None or _label_of(host, labels) is None or seen[host] >= pages:
            continue
        seen[host] += 1
        if reads_page(seen[host], pages, read):
            texts[host].append(page_text(payload, extract_links(payload, url, content_type=content_type).links))
    hosts = [
        LabelledHost(host, pages_of, len(hosts_of_ip[host_ip[host]]) if host in host_ip else 1,
                     _label_of(host, labels) or 0)
        for host, pages_of in sorted(texts.items()) if pages_of
    ]
    return Crawled(hosts, host_ip, records)


def _pages(folder: Path) -> Iterator[tuple[str, str, bytes | None, str]]:
    """(URL, IP, payload or None, content type) of every response record; the payload of 200 HTML responses only."""
    for path in warc_files(folder):
        with path.open("rb") as f:
            for record in ArchiveIterator(f):
                if record.rec_type != "response" or record.http_headers is None:
                    continue
                url = record.rec_headers.get_header("WARC-Target-URI", "")
                if not url.startswith(("http://", "https://")):
                    continue
                ip = record.rec_headers.get_header("WARC-IP-Address", "")
                content_type = record.http_headers.get_header("Content-Type") or ""
                mime = content_type.split(";", 1)[0].strip().lower()
                html = record.http_headers.get_statuscode() == "200" and mime in HTML_TYPES
                yield url, ip, record.content_stream().read() if html else None, content_type


def learn_quality(args: argparse.Namespace) -> int:
    """The command: 0 on success, 2 on a bad argument (one line naming it), 1 when nothing can be learnt."""
    started = time.monotonic()
    try:
        if args.labels is None or args.crawl is None:
            raise ConfigError("--labels" if args.labels is None else "--crawl",
                              "crawl learn quality needs --labels hosts.csv and --crawl OUT_DIR")
        if args.pages < 1:
            raise ConfigError("--pages", f"must be at least 1, got {args.pages}")
        if args.read < 1:
            raise ConfigError("--read", f"must be at least 1, got {args.read}")
        labels = read_labels(args.labels)
        read = min(args.read, args.pages)
        crawled = read_crawl(args.crawl, labels, args.pages, read)
    except ConfigError as e:
        sys.stderr.write(f"crawl: config error: {e}\n")
        return 2
    try:
        trained = train(crawled.hosts, args.pages, read, crawled.addresses, args.classifier)
    except ValueError as e:
        sys.stderr.write(f"crawl: error: {e}\n")
        return 1
    out: Path = args.out
    trained.model.save(out)
    (out / "report.md").write_text(report(trained, str(args.crawl)))
    auc = ", ".join(f"{name} {value:.4f}" for name, value in trained.auc.items())
    print(f"learn: {crawled.records} responses read, {len(crawled.hosts)} labelled hosts with pages "
          f"({trained.spam} spam), {len(labels) - len(crawled.hosts)} labelled hosts without", file=sys.stderr)
    print(f"learn: cross-validated AUC: {auc}; chosen: {trained.chosen}; "
          f"vocabulary: {len(trained.model.vocabulary)} words; {time.monotonic() - started:.1f} s", file=sys.stderr)
    print(f"learn: model: {out}/model.json, report: {out}/report.md", file=sys.stderr)
    return 0
