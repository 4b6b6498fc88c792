"""Errors the store raises, sorted by what the engine should do about them.

* ``StoreError``: writing the archive failed.
  * ``StoreFull``: the disk (or a quota, or the file-size limit) has no room left. The crawl
    cannot go on; the engine stops it cleanly. Every file the store owns is left either
    complete or marked ``.open`` with only whole records before a tail the next open cuts,
    so nothing half-written passes for finished.

Other ``OSError``s (permissions, I/O errors) propagate unchanged: they are not a condition
a crawler can wait out either, but they name their own cause.

The helpers here are shared by every writer of the crawl's folder (store, frontier, engine):
:func:`full_when_no_room` converts, :func:`append_whole` appends all or nothing, and
:func:`preallocate` gives a file its blocks for real, so that a file written through a memory
mapping meets a full disk as ``StoreFull`` when it is opened, never as SIGBUS later.
"""

from __future__ import annotations

import contextlib
import errno
import os
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
        _, free = free_space(path)
        reason = getattr(cause, "strerror", None) or str(cause or "no space left")
        super().__init__(f"store full: cannot write {path} ({reason}; "
                         f"{'free space unknown' if free is None else f'{free} bytes free'})")
        self.path = path


def free_space(path: Path) -> tuple[Path, int | None]:
    """The mount point that holds ``path`` (or its nearest existing ancestor) and its free bytes."""
    path = Path(os.path.abspath(path))
    while not path.exists() and path != path.parent:
        path = path.parent
    mount = path
    while not os.path.ismount(mount):
        mount = mount.parent
    try:
        return mount, shutil.disk_usage(path).free
    except OSError:
        return mount, None


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


def append_whole(fd: int, data: bytes | bytearray | memoryview, path: Path) -> None:
    """Append ``data`` to the ``O_APPEND`` file ``fd`` whole or not at all.

    A full disk takes what fits and then fails; the file is cut back to its size before the
    call, so whatever is appended later follows whole frames, and readers never stop at a
    torn one in the middle of a file.
    """
    start = os.fstat(fd).st_size
    view = memoryview(data)
    try:
        with full_when_no_room(path):
            while view:
                view = view[os.write(fd, view) :]
    except BaseException:
        with contextlib.suppress(OSError):
            os.ftruncate(fd, start)
        raise


def preallocate(fd: int, size: int, path: Path) -> None:
    """Give the first ``size`` bytes of ``fd`` real blocks (``posix_fallocate``; the file grows to
    ``size`` if shorter). A full disk raises :class:`StoreFull` here, instead of SIGBUS at the
    first store through a mapping of a sparse page."""
    with full_when_no_room(path):
        os.posix_fallocate(fd, 0, size)
