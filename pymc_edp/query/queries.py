"""Ready-made vectorised queries (sums and means of a column).

Any callable ``query(df)`` works with :func:`pymc_edp.query.query_edp`, evaluated once per
database and individual. A query with a method ``leave_one_out(df, id_col)`` -- the query
on ``df`` without each individual's rows, a :class:`pandas.Series` (scalar query) or
:class:`pandas.DataFrame` (vector query) indexed by individual -- is evaluated in one pass
per database instead; the classes here are examples of that protocol. Randomised queries
take a keyword argument ``rng`` in ``__call__`` and in ``leave_one_out``.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import pandas as pd

__all__ = ["MeanQuery", "SumQuery", "mean_query", "sum_query"]


class SumQuery:
    """Sum of one or several columns (a vector query for several).

    Parameters
    ----------
    columns : str or sequence of str
        Column(s) to sum.

    Examples
    --------
    >>> q = SumQuery("usage")
    >>> df = pd.DataFrame({"id": [1, 1, 2], "usage": [1.0, 2.0, 5.0]})
    >>> q(df), q.leave_one_out(df, "id").to_dict()
    (8.0, {1: 5.0, 2: 3.0})
    """

    def __init__(self, columns: str | Sequence[str]):
        self.columns = columns
        self._vector = not isinstance(columns, str)

    def __repr__(self) -> str:
        return f"SumQuery({self.columns!r})"

    def __call__(self, df: pd.DataFrame):
        """Query value on ``df``."""
        if self._vector:
            return df[list(self.columns)].sum()
        return float(df[self.columns].sum())

    def leave_one_out(self, df: pd.DataFrame, id_col: str) -> pd.Series | pd.DataFrame:
        """Query value without each individual's rows, indexed by individual."""
        cols = list(self.columns) if self._vector else [self.columns]
        out = df[cols].sum() - df.groupby(id_col, sort=False)[cols].sum()
        return out if self._vector else out[self.columns]


class MeanQuery:
    """Mean of a column over the rows of a database (per-row mean).

    Parameters
    ----------
    column : str
        Column to average.

    Examples
    --------
    >>> q = MeanQuery("usage")
    >>> df = pd.DataFrame({"id": [1, 1, 2], "usage": [1.0, 2.0, 6.0]})
    >>> q(df), q.leave_one_out(df, "id").to_dict()
    (3.0, {1: 6.0, 2: 1.5})
    """

    def __init__(self, column: str):
        self.column = column

    def __repr__(self) -> str:
        return f"MeanQuery({self.column!r})"

    def __call__(self, df: pd.DataFrame) -> float:
        """Query value on ``df``."""
        return float(df[self.column].mean())

    def leave_one_out(self, df: pd.DataFrame, id_col: str) -> pd.Series:
        """Query value without each individual's rows, indexed by individual."""
        col = df[self.column]
        grouped = col.groupby(df[id_col], sort=False)
        sums, counts = grouped.sum(), grouped.count()
        with np.errstate(divide="ignore", invalid="ignore"):
            return (col.sum() - sums) / (col.count() - counts)


def sum_query(columns: str | Sequence[str]) -> SumQuery:
    """Vectorised sum of a column (or several: a vector query); see :class:`SumQuery`.

    Examples
    --------
    >>> q = sum_query(["a", "b"])
    >>> q
    SumQuery(['a', 'b'])
    >>> df = pd.DataFrame({"id": [1, 2], "a": [1.0, 2.0], "b": [10.0, 20.0]})
    >>> q(df).to_dict()
    {'a': 3.0, 'b': 30.0}
    >>> q.leave_one_out(df, "id").to_dict("index")
    {1: {'a': 2.0, 'b': 20.0}, 2: {'a': 1.0, 'b': 10.0}}
    """
    return SumQuery(columns)


def mean_query(column: str) -> MeanQuery:
    """Vectorised mean of a column; see :class:`MeanQuery`.

    Examples
    --------
    >>> q = mean_query("age")
    >>> q
    MeanQuery('age')
    >>> q(pd.DataFrame({"id": [1, 2, 3], "age": [30.0, 40.0, 50.0]}))
    40.0
    """
    return MeanQuery(column)
