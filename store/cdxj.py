"""CDXJ indexes: one per WARC file, so replay tools (pywb, ``crawl warc cat``) find records by URL.

A line is ``SURT-key 14-digit-timestamp {json}``, the JSON holding ``url``, ``mime``,
``status``, ``digest``, ``length``, ``offset`` and ``filename`` as pywb's and cdxj-indexer's
lines do (``mime`` is ``warc/revisit`` for revisit records). Response and revisit records
are indexed (robots.txt and ``dns:`` answers included); requests and metadata are not.

Files, and why:

* While its WARC file is written, ``X.cdxj.open`` gets one line per record, in the order of
  the WARC, through a buffer: a crash may lose or tear the last lines, and they are rebuilt
  from the WARC (:mod:`store.recovery`), which is the journal. Lines are appended, never
  rewritten, so the complete lines of a torn file are a prefix of the right answer.
* When the WARC file is finished, its lines are sorted (by key, then time) into ``X.cdxj``,
  made durable, and only then is ``X.cdxj.open`` removed. A sorted file is what pywb
  binary-searches. A finished WARC of 1 GiB has some 150,000 lines (45 MB) on the in-vitro
  web; they are sorted in runs of :data:`SORT_RUN` lines, written to ``X.cdxj.runs``, then
  merged: sorting them at once raised the process's peak memory by ~75 MB at every rotation
  (45 MB of file read whole, then as many small objects); in runs the peak stays a few MB.
* The indexes of several folders (the machines of a cluster) merge into one sorted index
  (:func:`merge`, ``crawl warc cdxj-merge``) as a stream: one line of each file in memory.

The SURT key is the Internet Archive's form (``com,example)/path?a=1&b=2``: host labels
reversed, ``www.`` dropped, default port dropped, query arguments sorted, everything lower
case, a trailing slash dropped). It is computed here, for URLs that the crawler has already
canonicalised, at about 2 µs; the ``surt`` package would add tldextract and a second
canonicalisation. Lookups compare the stored ``url`` exactly, so keys that fold case or
argument order only narrow the search.
"""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import orjson

from store.durable import replace_file
from store.errors import StoreFull, full_when_no_room

CDXJ_SUFFIX = ".cdxj"
OPEN_SUFFIX = ".open"
RUNS_SUFFIX = ".runs"
SORT_RUN = 16_384  # lines sorted in memory at once (~5 MB on the in-vitro web)
_DEFAULT_PORTS = {"http": "80", "https": "443"}


def surt(url: str) -> str:
    """The SURT key of ``url`` (``dns:`` and other opaque URIs are only lower-cased)."""
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url.lower()
    authority, _, path = rest.partition("/")
    path, _, _ = ("/" + path).partition("#")
    host = authority.rpartition("@")[2].lower()
    port = ""
    if not host.endswith("]") and host.count(":") == 1:
        host, port = host.split(":")
        if port == _DEFAULT_PORTS.get(scheme.lower()):
            port = ""
    if host.startswith("www.") and host.count(".") > 1:
        host = host[4:]
    if not (host.startswith("[") or host.replace(".", "").isdigit()):  # IP literals keep their order
        host = ",".join(reversed(host.split(".")))
    path, question, query = path.partition("?")
    if len(path) > 1 and path.endswith("/"):
        path = path[:-1]
    if question:
        query = "&".join(sorted(query.split("&")))
        path += "?" + query
    return f"{host}{':' + port if port else ''}){path}".lower()


def mime_of(content_type: str | None) -> str:
    """The index's ``mime``: the media type without parameters, or ``unk``."""
    return (content_type or "").split(";", 1)[0].strip().lower() or "unk"


def timestamp14(warc_date: str) -> str:
    """``2026-11-22T10:00:00.123456Z`` → ``20261122100000``."""
    return warc_date[:19].replace("-", "").replace("T", "").replace(":", "")


def cdxj_line(
    url: str, warc_date: str, *, mime: str, status: int | None, digest: str, length: int, offset: int, filename: str
) -> bytes:
    fields: dict[str, str] = {"url": url, "mime": mime}
    if status is not None:
        fields["status"] = str(status)
    fields.update(digest=digest, length=str(length), offset=str(offset), filename=filename)
    return f"{surt(url)} {timestamp14(warc_date)} ".encode() + orjson.dumps(fields) + b"\n"


@dataclass(frozen=True, slots=True)
class IndexEntry:
    """One parsed CDXJ line."""

    key: str
    timestamp: str
    url: str
    mime: str
    status: int | None
    digest: str
    length: int
    offset: int
    filename: str


def parse_line(line: bytes) -> IndexEntry:
    """Parse one line; ``ValueError`` if it is not a CDXJ line of this form."""
    try:
        key, timestamp, blob = line.rstrip(b"\n").split(b" ", 2)
        f = orjson.loads(blob)
        return IndexEntry(
            key.decode(), timestamp.decode(), f["url"], f["mime"], int(f["status"]) if "status" in f else None,
            f["digest"], int(f["length"]), int(f["offset"]), f["filename"],
        )
    except (ValueError, KeyError, TypeError, orjson.JSONDecodeError) as e:
        raise ValueError(f"not a CDXJ line: {line[:120]!r}") from e


def index_name(warc_name: str) -> str:
    """``X.warc.gz`` → ``X.cdxj``."""
    return warc_name.removesuffix(".warc.gz") + CDXJ_SUFFIX


def complete_lines(path: Path) -> list[bytes]:
    """The whole, parseable lines at the start of ``path``; the file is cut just after them."""
    data = path.read_bytes()
    lines = data.split(b"\n")[:-1]  # whatever follows the last newline is torn
    keep = []
    for line in lines:
        try:
            parse_line(line)
        except ValueError:
            break  # a zero-filled or garbled tail: nothing after it is trusted
        keep.append(line)
    size = sum(len(line) + 1 for line in keep)
    if size < len(data):
        with open(path, "r+b") as f:
            f.truncate(size)
    return [line + b"\n" for line in keep]


def write_sorted(lines: Iterable[bytes], final: Path) -> None:
    """Write ``lines`` (each ending in a newline) sorted into ``final`` and make it durable, in bounded memory.

    Runs of :data:`SORT_RUN` lines are sorted and written to a scratch file beside ``final``, then
    merged into it. ``final`` is written aside and renamed, so a crash or a full disk
    (``StoreFull``) leaves it as it was, never half written; the scratch file goes in any case.
    """
    scratch = final.with_name(final.name + RUNS_SUFFIX)
    try:
        with full_when_no_room(scratch), open(scratch, "w+b") as runs:
            bounds = [0]
            lines = iter(lines)
            while run := sorted(itertools.islice(lines, SORT_RUN)):
                runs.writelines(run)
                bounds.append(runs.tell())
            runs.flush()
            replace_file(final, lambda f: f.writelines(heapq.merge(*(
                _lines_between(scratch, start, end) for start, end in itertools.pairwise(bounds)))))
    except StoreFull as e:  # the user looks for the index by its name, not its temporary's
        raise StoreFull(final, e.__cause__) from e.__cause__
    finally:
        scratch.unlink(missing_ok=True)


def _lines_between(path: Path, start: int, end: int) -> Iterator[bytes]:
    """The lines of ``path`` from byte ``start`` to byte ``end`` (both at line starts)."""
    with open(path, "rb") as f:
        f.seek(start)
        while start < end:
            line = f.readline()
            start += len(line)
            yield line


class IndexWriter:
    """Appends the lines of one WARC file's index to ``X.cdxj.open``; ``finish`` sorts them into ``X.cdxj``."""

    def __init__(self, directory: Path, warc_name: str) -> None:
        self.final = directory / index_name(warc_name)
        self.path = self.final.with_name(self.final.name + OPEN_SUFFIX)
        self.lines = 0
        self._file: IO[bytes] | None = None

    def add(self, line: bytes) -> None:
        with full_when_no_room(self.path):
            if self._file is None:
                self._file = open(self.path, "ab", buffering=1 << 16)
            self._file.write(line)
        self.lines += 1

    def finish(self) -> None:
        """Sort the lines into the finished index, then drop the open file (rebuilt from the WARC if this fails)."""
        try:
            with full_when_no_room(self.path):
                if self._file is not None:
                    self._file.close()
                elif not self.path.exists():
                    self.path.touch()  # a WARC file with no indexed record still gets its (empty) index
        finally:
            self._file = None
        with open(self.path, "rb") as lines:
            write_sorted(lines, self.final)
        self.path.unlink()

    def abandon(self) -> None:
        """Close without finishing: the ``.open`` file stays, marked, for the next open to rebuild."""
        if self._file is not None:
            try:
                self._file.close()
            except OSError:
                pass  # the lines lost in the buffer are rebuilt from the WARC
            self._file = None


def index_files(directory: Path) -> list[Path]:
    """Every finished and open index in ``directory``."""
    return sorted(p for p in directory.iterdir() if p.name.endswith((CDXJ_SUFFIX, CDXJ_SUFFIX + OPEN_SUFFIX)))


def lookup(directory: Path, url: str) -> Iterator[IndexEntry]:
    """Every capture of exactly ``url`` in the indexes of ``directory``, oldest first."""
    prefix = surt(url).encode() + b" "
    found = []
    for path in index_files(directory):
        with open(path, "rb") as f:
            for line in f:
                if line.startswith(prefix):
                    try:
                        entry = parse_line(line)
                    except ValueError:
                        continue  # a torn last line of an open index
                    if entry.url == url:
                        found.append(entry)
    return iter(sorted(found, key=lambda e: (e.timestamp, e.filename, e.offset)))


def _relocated(path: Path, folder: str) -> Iterator[bytes]:
    """The lines of one finished index, each ``filename`` prefixed with ``folder``. The prefix is the
    same on every line of a file and the filename its last field, so the file stays sorted."""
    with open(path, "rb") as f:
        for line in f:
            if not line.endswith(b"\n"):
                line += b"\n"
            if folder:
                key, timestamp, blob = line.split(b" ", 2)
                fields = orjson.loads(blob)
                fields["filename"] = folder + fields["filename"]
                line = b"%s %s %s\n" % (key, timestamp, orjson.dumps(fields))
            yield line


def merge(indexes: Iterable[tuple[Path, str]]) -> Iterator[bytes]:
    """The lines of the finished (sorted) ``indexes`` in one sorted stream, a k-way merge; each index
    comes with the folder (``""`` or ending in ``/``) to put before the filenames of its lines."""
    return heapq.merge(*(_relocated(path, folder) for path, folder in indexes))
