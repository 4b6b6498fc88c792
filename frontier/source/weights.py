"""SOUrCe's page vectors: the Xpath vocabulary and the tf-idf weighting (digest §2.6, eqs. 1–2).

Pure: bags of Xpaths (from :func:`frontier.source.features.xpath_bag`) in, numpy float64
vectors out. No network, no clock, no files; the site model stores a vocabulary through
:meth:`Vocabulary.to_data`.

* V = the Xpaths with df ≥ θ over the training pages D (θ = ``min_df``, 4 = minPts;
  ``min_df=1`` disables the filter). Columns are the Xpaths in sorted order, so the same
  pages give the same columns whatever order they come in.
* w_{x,d} = log(tf + 1) · log(|D| / df + 1), natural logarithms (the base cancels in the
  normalisation, A4); the +1 inside the idf follows the paper, not [C].
* Each vector is L1-normalised; a page with no Xpath of V is the zero vector.
* V, df and |D| are frozen after fitting: a new page is weighted with the training idf,
  its Xpaths outside V ignored, and it is normalised too (§2.6, step 4).

Bags hold positive counts (a :class:`~collections.Counter` of leaves). The stored form
keeps df and |D| only (integers), and the idf is recomputed from them on load, so a model
file is byte-stable and the idf is bit-identical after a round trip.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

__all__ = ["MIN_DF", "FloatArray", "Vocabulary"]

FloatArray = npt.NDArray[np.float64]

MIN_DF = 4
"""θ: the smallest document frequency an Xpath needs to be a feature (minPts, §2.6)."""


@dataclass(frozen=True)
class Vocabulary:
    """The frozen feature space: Xpaths (sorted, one column each), their df, and |D|.

    Invariants: ``paths`` sorted and unique; ``df`` aligned with it, each in
    [``min_df``, ``n_pages``]. ``column`` and ``idf`` are derived from them.
    """

    paths: tuple[str, ...]
    df: tuple[int, ...]
    n_pages: int
    min_df: int = MIN_DF
    column: Mapping[str, int] = field(init=False, repr=False, compare=False)
    idf: FloatArray = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.min_df < 1:
            raise ValueError(f"min_df must be at least 1, not {self.min_df}")
        if len(self.df) != len(self.paths) or list(self.paths) != sorted(set(self.paths)):
            raise ValueError("paths must be sorted and unique, with one df each")
        if any(not self.min_df <= df <= self.n_pages for df in self.df):
            raise ValueError(f"every df must lie in [{self.min_df}, {self.n_pages}]")
        idf = np.log(self.n_pages / np.array(self.df, dtype=np.float64) + 1)
        idf.flags.writeable = False
        # frozen: the derived fields are set once, here
        object.__setattr__(self, "column", {path: i for i, path in enumerate(self.paths)})
        object.__setattr__(self, "idf", idf)

    @classmethod
    def fit(cls, bags: Iterable[Mapping[str, int]], min_df: int = MIN_DF) -> Vocabulary:
        """V, df and |D| of the training pages ``bags`` (AT-05). Raises ValueError when there is none."""
        df: Counter[str] = Counter()
        n_pages = 0
        for bag in bags:
            df.update(bag.keys())
            n_pages += 1
        if not n_pages:
            raise ValueError("a vocabulary needs at least one training page")
        paths = tuple(sorted(path for path, count in df.items() if count >= min_df))
        return cls(paths, tuple(df[path] for path in paths), n_pages, min_df)

    def __len__(self) -> int:
        return len(self.paths)

    def vector(self, bag: Mapping[str, int]) -> FloatArray:
        """The L1-normalised weights of one page, shape (|V|,)."""
        row: FloatArray = self.matrix([bag])[0]
        return row

    def matrix(self, bags: Sequence[Mapping[str, int]]) -> FloatArray:
        """The L1-normalised weights of several pages, one row each, shape (len(bags), |V|)."""
        tf = np.zeros((len(bags), len(self.paths)))
        for row, bag in enumerate(bags):
            for path, count in bag.items():
                column = self.column.get(path)
                if column is not None:
                    tf[row, column] = count
        weights = np.log1p(tf) * self.idf
        totals = weights.sum(axis=1, keepdims=True)
        normalised: FloatArray = np.divide(weights, totals, out=np.zeros_like(weights), where=totals > 0)
        return normalised

    def to_data(self) -> dict[str, Any]:
        """Plain JSON-able data: ``{"df": {xpath: df}, "min_df": θ, "n_pages": |D|}``, keys sorted."""
        return {"df": dict(zip(self.paths, self.df)), "min_df": self.min_df, "n_pages": self.n_pages}

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> Vocabulary:
        df = data["df"]
        paths = tuple(sorted(df))
        return cls(paths, tuple(int(df[path]) for path in paths), int(data["n_pages"]), int(data["min_df"]))
