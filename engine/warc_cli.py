"""``crawl warc ls|verify|cat|cdxj-merge|wacz``: look into the archive of a crawl (its output folder or its ``warc/`` folder).

* ``crawl warc ls OUT``: one line per record: file, offset, length, type, date, target URI.
* ``crawl warc verify OUT``: every WARC file must be whole gzip members, parse with warcio
  with every block and payload digest right, and agree with its CDXJ index (each line points
  at a record of its URL, and every response and revisit record has a line); and every
  revisit of an identical payload must refer to a response of the archive with its URI, its date and the same payload
  digest (a revisit promises identical payloads: replay serves the original's in its place).
  Prints one line per file; exits 1 if any file fails, naming the file and the problem.
* ``crawl warc cat OUT URL``: the most recent record of ``URL`` (response or revisit), found
  through the CDXJ indexes and read from its offset, as WARC text on standard output.
* ``crawl warc cdxj-merge OUT... --out FILE [--relative-to COLLECTION]``: the finished CDXJ
  indexes of several output folders (the machines of a cluster, whose file names carry their
  node) merged into one sorted index, streamed. Filenames stay bare, for a collection whose
  archive folder holds all the WARC files, or with ``--relative-to`` become paths from that
  folder. Refuses indexes still ``.open`` and, without ``--relative-to``, a name in two folders.
* ``crawl warc wacz OUT [--out FILE.wacz]``: the finished archive packaged as one WACZ file (WARC
  files, the merged index, the page list, the data package: ``engine/wacz.py``), by default
  ``OUT/crawl.wacz``. Refuses files still ``.open``.

Files still ``.open`` (a crawl running, or one that crashed before the archive was opened
again) are listed and verified too, and flagged.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
import zlib
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, NamedTuple

from warcio.archiveiterator import ArchiveIterator

from engine import wacz
from store import cdxj
from store.durable import replace_file
from store.recovery import INDEXED, warc_records
from store.warc import OPEN_SUFFIX, PROFILE_NOT_MODIFIED, end_of_complete_members


def warc_folder(path: Path) -> Path:
    """A crawl's output folder holds its archive in ``warc/``; a folder of WARC files is taken as is."""
    return path / "warc" if (path / "warc").is_dir() else path


def warc_files(folder: Path) -> list[Path]:
    return sorted(p for p in folder.iterdir() if p.name.endswith((".warc.gz", ".warc.gz" + OPEN_SUFFIX)))


def read_member(path: Path, offset: int, length: int) -> bytes:
    """The decompressed gzip member at ``offset`` (one record)."""
    with open(path, "rb") as f:
        f.seek(offset)
        return zlib.decompress(f.read(length), 31)


def ls(folder: Path) -> int:
    out = sys.stdout
    for path in warc_files(folder):
        for r in warc_records(path):
            h: Any = r.headers  # warcio's StatusAndHeaders, an untyped library's class
            out.write(f"{path.name}\t{r.offset}\t{r.length}\t{r.kind}\t{h.get_header('WARC-Date')}\t"
                      f"{h.get_header('WARC-Target-URI') or '-'}\n")
    return 0


class Original(NamedTuple):
    """What a revisit must agree with: its original response's URI, date and payload digest."""

    uri: str
    date: str
    digest: str


class Reference(NamedTuple):
    """What a revisit record says of its original."""

    file: str  # the revisit's WARC file
    target: str  # the revisit's own URI
    record_id: str  # WARC-Refers-To
    original: Original  # WARC-Refers-To-Target-URI, WARC-Refers-To-Date, and its own WARC-Payload-Digest


@dataclass
class Revisits:
    """Revisits waiting for the response they refer to. Files are read newest first
    (:func:`read_order`) and an original is written before its revisits, so only the revisits
    whose original is in an older file wait, and no file's responses are kept after it is read."""

    waiting: dict[str, list[Reference]] = field(default_factory=dict)
    problems: dict[str, str] = field(default_factory=dict)  # file name → its first problem

    def read(self, references: list[Reference], responses: dict[str, Original]) -> None:
        """One file's revisits, then its responses (by record id)."""
        for ref in references:
            self.waiting.setdefault(ref.record_id, []).append(ref)
        for record_id, original in responses.items():
            for ref in self.waiting.pop(record_id, ()):
                if ref.original != original:
                    self.problems.setdefault(ref.file, f"the revisit of {ref.target} says {' '.join(ref.original)} of "
                                                       f"{record_id}, which is {' '.join(original)}")

    def finish(self) -> None:
        """Revisits whose original is nowhere in the archive."""
        for record_id, refs in self.waiting.items():
            for ref in refs:
                self.problems.setdefault(ref.file, f"the revisit of {ref.target} refers to {record_id or 'no record'}, "
                                                   "which is not in the archive")
        self.waiting.clear()


_SERIAL = re.compile(r"(.*)-\d{14}-(\d+)\.warc\.gz")


def read_order(files: list[Path]) -> list[Path]:
    """Newest first within each prefix, by serial (a name's date may run back with the clock)."""

    def key(path: Path) -> tuple[str, int]:
        m = _SERIAL.fullmatch(path.name.removesuffix(OPEN_SUFFIX))
        return (m[1], int(m[2])) if m else (path.name, 0)

    return sorted(files, key=key, reverse=True)


def verify_file(path: Path, revisits: Revisits | None = None) -> str:
    """A problem of one WARC file and its index, or "" if there is none. Its revisits and responses
    go to ``revisits``, where they are checked against each other across files."""
    size = path.stat().st_size
    whole = end_of_complete_members(path)
    if whole < size:
        return f"not whole gzip members from byte {whole} of {size}"
    kinds: Counter[str] = Counter()
    name = path.name.removesuffix(OPEN_SUFFIX)
    references: list[Reference] = []
    responses: dict[str, Original] = {}
    with open(path, "rb") as f:
        try:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.raw_stream.read()  # digests are of the bytes as stored: no content-coding undone
                kinds[record.rec_type] += 1
                get = record.rec_headers.get_header
                if record.rec_type == "response":
                    responses[get("WARC-Record-ID")] = Original(get("WARC-Target-URI"), get("WARC-Date"), get("WARC-Payload-Digest"))
                elif record.rec_type == "revisit" and get("WARC-Profile") != PROFILE_NOT_MODIFIED:
                    references.append(Reference(name, get("WARC-Target-URI"), get("WARC-Refers-To") or "", Original(
                        get("WARC-Refers-To-Target-URI"), get("WARC-Refers-To-Date"), get("WARC-Payload-Digest"))))
        except Exception as e:  # warcio raises several kinds; each is the answer here
            return f"does not parse: {type(e).__name__}: {e}"
        finally:
            if revisits is not None:  # what was read, even of a file that fails
                revisits.read(references, responses)
    if not kinds or next(iter(kinds)) != "warcinfo":
        return "does not begin with a warcinfo record"
    index = path.parent / cdxj.index_name(name)
    if not index.exists():
        index = index.with_name(index.name + OPEN_SUFFIX)
        if not index.exists():
            return "has no CDXJ index"
    lines = index.read_bytes().splitlines()
    for number, line in enumerate(lines, 1):
        try:
            entry = cdxj.parse_line(line)
            head = read_member(path, entry.offset, entry.length).split(b"\r\n\r\n", 1)[0].decode("utf-8", "replace")
        except (ValueError, OSError, zlib.error) as e:
            return f"{index.name} line {number}: {e}"
        if entry.filename != name or f"WARC-Target-URI: {entry.url}\r\n" not in head + "\r\n":
            return f"{index.name} line {number} does not point at a record of {entry.url}"
    indexed = sum(kinds[k] for k in INDEXED)
    if len(lines) != indexed:
        return f"{index.name} has {len(lines)} lines for {indexed} response and revisit records"
    return ""


def verify(folder: Path) -> int:
    files = warc_files(folder)
    if not files:
        print(f"crawl warc verify: no WARC files in {folder}", file=sys.stderr)
        return 1
    revisits = Revisits()
    problems = {path: verify_file(path, revisits) for path in read_order(files)}
    revisits.finish()
    failed = 0
    for path in files:
        problem = problems[path] or revisits.problems.get(path.name.removesuffix(OPEN_SUFFIX), "")
        flag = " (still .open)" if path.name.endswith(OPEN_SUFFIX) else ""
        print(f"{'FAIL' if problem else 'ok'}\t{path.name}{flag}" + (f"\t{problem}" if problem else ""))
        failed += bool(problem)
    print(f"{len(files) - failed} of {len(files)} files verified", file=sys.stderr)
    return 1 if failed else 0


def cat(folder: Path, url: str) -> int:
    entries = list(cdxj.lookup(folder, url))
    if not entries:
        print(f"crawl warc cat: no record of {url} in {folder}", file=sys.stderr)
        return 1
    entry = entries[-1]
    path = folder / entry.filename
    if not path.exists():
        path = path.with_name(path.name + OPEN_SUFFIX)
    sys.stdout.buffer.write(read_member(path, entry.offset, entry.length))
    sys.stdout.flush()
    return 0


def cdxj_merge(folders: list[Path], out: Path, collection: Path | None) -> int:
    indexes: list[tuple[Path, str]] = []
    seen: dict[str, Path] = {}
    for folder in folders:
        still_open = [p.name for p in cdxj.index_files(folder) if p.name.endswith(cdxj.OPEN_SUFFIX)]
        if still_open:
            print(f"crawl warc cdxj-merge: {folder} has indexes still open ({', '.join(still_open)}): "
                  "let its crawl finish, or resume it and stop it", file=sys.stderr)
            return 1
        prefix = "" if collection is None else os.path.relpath(folder.resolve(), collection.resolve()) + "/"
        for path in cdxj.index_files(folder):
            if collection is None and path.name in seen:
                print(f"crawl warc cdxj-merge: {path.name} is in {seen[path.name]} and {folder}: their records "
                      "would be confused (give each machine its --node, or use --relative-to)", file=sys.stderr)
                return 1
            seen[path.name] = folder
            indexes.append((path, "" if prefix == "./" else prefix))
    lines = 0

    def write(f: IO[bytes]) -> None:
        nonlocal lines
        for line in cdxj.merge(indexes):
            f.write(line)
            lines += 1

    replace_file(out, write)
    print(f"{lines} lines from {len(indexes)} indexes in {len(folders)} folders → {out}", file=sys.stderr)
    return 0


def wacz_package(folder: Path, out: Path, title: str) -> int:
    started = time.monotonic()
    try:
        packaged = wacz.package(folder, out, title=title)
    except wacz.NotFinished as e:
        print(f"crawl warc wacz: {folder} has files still open ({e}): let its crawl finish, or resume it and stop it",
              file=sys.stderr)
        return 1
    print(f"{packaged.warc_files} WARC files, {packaged.index_lines} index lines, {packaged.pages} pages → {out} "
          f"({packaged.bytes} bytes, {time.monotonic() - started:.1f} s)", file=sys.stderr)
    return 0


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="crawl warc", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("ls", "list the records"), ("verify", "check every file, digest and index line")):
        commands.add_parser(name, help=text).add_argument("folder", type=Path, help="crawl output folder or WARC folder")
    cat_parser = commands.add_parser("cat", help="print the most recent record of a URL")
    cat_parser.add_argument("folder", type=Path, help="crawl output folder or WARC folder")
    cat_parser.add_argument("url")
    merge_parser = commands.add_parser("cdxj-merge", help="merge the CDXJ indexes of several folders into one")
    merge_parser.add_argument("folders", type=Path, nargs="+", metavar="folder",
                              help="crawl output folders or WARC folders (one per machine)")
    merge_parser.add_argument("--out", type=Path, required=True, metavar="FILE", help="the merged index")
    merge_parser.add_argument("--relative-to", type=Path, metavar="COLLECTION",
                              help="write each filename as its WARC file's path from this folder")
    wacz_parser = commands.add_parser("wacz", help="package the archive as one WACZ file")
    wacz_parser.add_argument("folder", type=Path, help="crawl output folder or WARC folder")
    wacz_parser.add_argument("--out", type=Path, metavar="FILE", help="the WACZ file (default: OUT/crawl.wacz)")
    args = parser.parse_args(argv)
    given: list[Path] = args.folders if args.command == "cdxj-merge" else [args.folder]
    folders = [warc_folder(f) for f in given]
    for path, folder in zip(given, folders, strict=True):
        if not folder.is_dir():
            parser.error(f"{path} is not a folder")
    folder = folders[0]
    try:
        if args.command == "cdxj-merge":
            return cdxj_merge(folders, args.out, args.relative_to)
        if args.command == "wacz":
            return wacz_package(folder, args.out or given[0] / "crawl.wacz", f"crawl of {given[0].resolve().name}")
        if args.command == "ls":
            return ls(folder)
        if args.command == "verify":
            return verify(folder)
        return cat(folder, args.url)
    except BrokenPipeError:  # the reader (head, less) left: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
