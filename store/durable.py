"""Replacing a file so that a crash, a power loss or a full disk never leaves half of it.

Every small state file of the crawl (the frontier's snapshot, the sieve's state, the
virtualizer's index, stats.json, the WARC index's sidecars) is replaced the same way:
write the new content aside, fsync it, rename it over the old name, fsync the directory.
A reader then sees the old file or the new one, whole. A write that finds no room raises
:class:`store.errors.StoreFull` and deletes the temporary: the old file stays, as it was.

``fsync=False`` keeps the rename (kill -9 safety) and skips both fsyncs (no power-loss
safety): for tests and throwaway runs.

Files that grow by appends and are finished by a rename (a WARC file, a graph segment) are
not replaced whole; they use :func:`fsync_directory` for the rename's part of the pattern.
Nothing here decides what to write: every caller owns its format.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import BinaryIO

from store.errors import full_when_no_room

Writer = Callable[[BinaryIO], None]


def replace_file(path: Path, content: bytes | Writer, *, fsync: bool = True, suffix: str = "~") -> None:
    """Replace ``path`` atomically with ``content`` (bytes, or a function writing to the open file).

    The temporary is ``path`` + ``suffix`` in the same directory, so the rename never
    crosses a file system.
    """
    tmp = path.with_name(path.name + suffix)
    try:
        with full_when_no_room(tmp), open(tmp, "wb") as f:
            if isinstance(content, bytes):
                f.write(content)
            else:
                content(f)
            f.flush()
            if fsync:
                os.fsync(f.fileno())
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    os.replace(tmp, path)
    if fsync:
        fsync_directory(path.parent)


def fsync_directory(directory: Path) -> None:
    """Make the names in ``directory`` (a rename, a new file) durable."""
    fsync_path(directory)


def fsync_path(path: Path) -> None:
    """Make what ``path`` names durable: a file's data (one no descriptor is kept open for),
    or a directory's names."""
    fd = os.open(path, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
