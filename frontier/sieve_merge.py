"""The sieve's sorted merge: which fingerprints of a bucket are new, and the store that knows them.

Step 1 of a flush of :class:`frontier.sieve.MercatorSieve`. The bucket is cut into
``RANGES`` ranges of the hash space (if it holds over ``RANGES_ABOVE`` URLs), so the sort's
temporaries stay about 1/16 of the bucket. Each range is stable-argsorted; duplicates within
it are dropped, keeping the earliest arrival; the survivors are merged with the same range
of the store, read sequentially in chunks of ``CHUNK`` fingerprints, into the new store
(``np.searchsorted`` finds the known ones, ``np.insert`` merges the new ones). New arrivals
are marked in a mask over the bucket.

Reads the old store and writes the new one through the streams it is given, sequentially;
never opens, renames or deletes a file (the sieve commits the result).
"""

from __future__ import annotations

import io
from typing import BinaryIO

import numpy as np
import numpy.typing as npt

from frontier.sieve_files import U64, SieveCorrupted

CHUNK = 1 << 19  # fingerprints per store chunk read or written by a flush (4 MiB)
RANGES = 16  # a flush sorts the bucket in this many ranges of the hash space ...
RANGES_ABOVE = 1 << 16  # ... when it holds more than this many URLs

Fingerprints = npt.NDArray[np.uint64]
Mask = npt.NDArray[np.bool_]


def merge_bucket(fps: Fingerprints, src: io.BufferedIOBase, known: int, dst: BinaryIO) -> Mask:
    """Merge the bucket's fingerprints into the store stream; returns a mask of the new arrivals.

    ``src`` is positioned at the first of its ``known`` sorted fingerprints; ``dst`` receives
    the merged store. A fingerprint is new if the store lacks it and no earlier slot of the
    bucket holds it.
    """
    n = len(fps)
    new = np.zeros(n, dtype=bool)
    merge = _StoreMerge(src, known, dst)
    ranges = RANGES if n > RANGES_ABOVE else 1
    shift = 64 - (ranges.bit_length() - 1)
    above = np.empty(n, dtype=bool) if ranges > 1 else None
    below = np.empty(n, dtype=bool) if ranges > 1 else None
    for r in range(ranges):
        if above is None or below is None:
            slots = np.arange(n)
        else:
            np.greater_equal(fps, np.uint64(r << shift), out=above)
            if r + 1 < ranges:
                np.less(fps, np.uint64((r + 1) << shift), out=below)
                above &= below
            slots = np.flatnonzero(above)
        values = fps[slots]
        order = np.argsort(values, kind="stable")  # equal fingerprints keep arrival order
        values, slots = values[order], slots[order]
        del order
        first = np.empty(len(values), dtype=bool)
        first[:1] = True
        np.not_equal(values[1:], values[:-1], out=first[1:])
        values, slots = values[first], slots[first]
        new[slots[merge.feed(values)]] = True
    merge.finish()
    return new


class _StoreMerge:
    """Streams the sorted store from ``src`` to ``dst`` in chunks, inserting new fingerprints.

    ``feed`` takes sorted unique fingerprints, each call's all above the previous call's, and
    says which of them the store lacks; ``finish`` copies the rest of the store.
    """

    def __init__(self, src: io.BufferedIOBase, known: int, dst: BinaryIO) -> None:
        self._src, self._left, self._dst = src, known, dst
        self._chunk: Fingerprints = np.empty(0, dtype=U64)  # read, not yet written

    def feed(self, values: Fingerprints) -> Mask:
        is_new = np.ones(len(values), dtype=bool)
        j, total = 0, len(values)
        while j < total:
            chunk = self._chunk
            if not len(chunk):
                if not self._left:
                    self._write(values[j:])
                    break
                chunk = self._chunk = self._read()
            k = j + int(np.searchsorted(values[j:], chunk[-1], side="right"))
            if k < total:  # values go past this chunk: all of it can be written
                self._chunk = np.empty(0, dtype=U64)
            else:  # keep the part above the last value for the next range
                p = int(np.searchsorted(chunk, values[-1], side="right"))
                chunk, self._chunk = chunk[:p], chunk[p:]
            self._write(self._insert(chunk, values[j:k], is_new[j:k]))
            j = k
        return is_new

    def finish(self) -> None:
        self._write(self._chunk)
        while self._left:
            self._write(self._read())

    @staticmethod
    def _insert(chunk: Fingerprints, values: Fingerprints, is_new: Mask) -> Fingerprints:
        if not len(values):
            return chunk
        if not len(chunk):
            return values
        where = np.searchsorted(chunk, values)
        is_new[:] = chunk[np.minimum(where, len(chunk) - 1)] != values
        return np.insert(chunk, where[is_new], values[is_new])

    def _read(self) -> Fingerprints:
        count = min(CHUNK, self._left)
        chunk = np.empty(count, dtype=U64)
        if self._src.readinto(chunk.data.cast("B")) != 8 * count:
            raise SieveCorrupted("the store is shorter than its header says")
        self._left -= count
        return chunk

    def _write(self, values: Fingerprints) -> None:
        if len(values):
            self._dst.write(np.ascontiguousarray(values, dtype=U64).data.cast("B"))
