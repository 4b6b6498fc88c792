"""Errors the store raises, sorted by what the engine should do about them.

* ``StoreError``: writing the archive failed.
  * ``StoreFull``: the disk (or a quota, or the file-size limit) has no room left. The crawl
    cannot go on; the engine stops it cleanly. Every file the store owns is left either
    complete or marked ``.open`` with only whole records before a tail the next open cuts,
    so nothing half-written passes for finished.

Other ``OSError``s (permissions, I/O errors) propagate unchanged: they are not a condition
a crawler can wait out either, but they name their own cause.
"""

from __future__ import annotations

import contextlib
import errno
import shutil
from collections.abc import Iterator
from pathlib import Path

# ENOSPC: no space; EDQUOT: quota exceeded; EFBIG: the process's file-size limit (ulimit -f)
NO_ROOM = frozenset((errno.ENOSPC, errno.EDQUOT, errno.EFBIG))


class StoreError(Exception):
    """Writing the archive failed."""


class StoreFull(StoreError):
    """No room left to write ``path``; the message says how much space the file system has."""

    def __init__(self, path: Path, cause: BaseException | None = None) -> None:
        try:
            free = f"{shutil.disk_usage(path.parent if path.suffix else path).free} bytes free"
        except OSError:
            free = "free space unknown"
        reason = getattr(cause, "strerror", None) or str(cause or "no space left")
        super().__init__(f"store full: cannot write {path} ({reason}; {free})")
        self.path = path


def is_no_room(error: BaseException) -> bool:
    """True for the ``OSError``s that mean "no room", which become :class:`StoreFull`."""
    return isinstance(error, OSError) and error.errno in NO_ROOM


@contextlib.contextmanager
def full_when_no_room(path: Path) -> Iterator[None]:
    """Turn a "no room" ``OSError`` raised inside the block into :class:`StoreFull` naming ``path``."""
    try:
        yield
    except OSError as e:
        if is_no_room(e):
            raise StoreFull(path, e) from e
        raise
