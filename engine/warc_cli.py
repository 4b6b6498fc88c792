"""``crawl warc ls|verify|cat``: look into the archive of a crawl (its output folder or its ``warc/`` folder).

* ``crawl warc ls OUT``: one line per record: file, offset, length, type, date, target URI.
* ``crawl warc verify OUT``: every WARC file must be whole gzip members, parse with warcio
  with every block and payload digest right, and agree with its CDXJ index (each line points
  at a record of its URL, and every response and revisit record has a line). Prints one line
  per file; exits 1 if any file fails, naming the file and the problem.
* ``crawl warc cat OUT URL``: the most recent record of ``URL`` (response or revisit), found
  through the CDXJ indexes and read from its offset, as WARC text on standard output.

Files still ``.open`` (a crawl running, or one that crashed before the archive was opened
again) are listed and verified too, and flagged.
"""

from __future__ import annotations

import argparse
import os
import sys
import zlib
from collections import Counter
from pathlib import Path

from warcio.archiveiterator import ArchiveIterator  # type: ignore[import-untyped]

from store import cdxj
from store.recovery import INDEXED, warc_records
from store.warc import OPEN_SUFFIX, end_of_complete_members


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
            h = r.headers
            out.write(f"{path.name}\t{r.offset}\t{r.length}\t{r.kind}\t{h.get_header('WARC-Date')}\t"  # type: ignore[attr-defined]
                      f"{h.get_header('WARC-Target-URI') or '-'}\n")  # type: ignore[attr-defined]
    return 0


def verify_file(path: Path) -> str:
    """A problem of one WARC file and its index, or "" if there is none."""
    size = path.stat().st_size
    whole = end_of_complete_members(path)
    if whole < size:
        return f"not whole gzip members from byte {whole} of {size}"
    kinds: Counter[str] = Counter()
    with open(path, "rb") as f:
        try:
            for record in ArchiveIterator(f, check_digests="raise"):
                record.raw_stream.read()  # digests are of the bytes as stored: no content-coding undone
                kinds[record.rec_type] += 1
        except Exception as e:  # warcio raises several kinds; each is the answer here
            return f"does not parse: {type(e).__name__}: {e}"
    if not kinds or next(iter(kinds)) != "warcinfo":
        return "does not begin with a warcinfo record"
    name = path.name.removesuffix(OPEN_SUFFIX)
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
    failed = 0
    for path in files:
        problem = verify_file(path)
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


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="crawl warc", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    for name, text in (("ls", "list the records"), ("verify", "check every file, digest and index line")):
        commands.add_parser(name, help=text).add_argument("folder", type=Path, help="crawl output folder or WARC folder")
    cat_parser = commands.add_parser("cat", help="print the most recent record of a URL")
    cat_parser.add_argument("folder", type=Path, help="crawl output folder or WARC folder")
    cat_parser.add_argument("url")
    args = parser.parse_args(argv)
    folder = warc_folder(args.folder)
    if not folder.is_dir():
        parser.error(f"{args.folder} is not a folder")
    try:
        if args.command == "ls":
            return ls(folder)
        if args.command == "verify":
            return verify(folder)
        return cat(folder, args.url)
    except BrokenPipeError:  # the reader (head, less) left: not an error of ours
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
