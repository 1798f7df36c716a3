"""Neighbour datasets: which log-likelihood rows each record or individual changes."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["Neighbours", "RecordLayout"]

#: What a record of a multivariate or coupled observation is (NeighbourOptions(records=)).
RECORDS = ("auto", "rows", "elements")


class RecordLayout(Protocol):
    """The records of every observed variable, laid end to end as rows.

    What :class:`~pymc_edp.model.loglik.LogLikelihood` satisfies: ``names`` in order,
    ``offsets`` of each variable's first row (``len(names) + 1`` long), ``datasets`` with dims
    ``("chain", "draw", *record_dims)``.
    """

    names: tuple[str, ...]
    offsets: np.ndarray
    datasets: xr.Dataset

    @property
    def n_rows(self) -> int:
        """Total number of records over all observed variables."""

    def record_dims(self, name: str) -> list[str]:
        """Record dimensions of observed variable ``name``."""

    def row_labels(self) -> list[str]:
        """ArviZ-style label of every row, e.g. ``y[3]``."""


@dataclass(frozen=True)
class Neighbours:
    """Which rows each neighbour dataset changes (compressed sparse rows).

    Neighbour ``k`` (coordinate ``labels[k]``) changes rows ``rows[indptr[k]:indptr[k + 1]]``;
    ``observed[k]`` is the observed variable of its first row (``"*"`` if it spans several).
    """

    labels: np.ndarray
    indptr: np.ndarray
    rows: np.ndarray
    observed: np.ndarray

    def rows_of(self, k: int) -> np.ndarray:
        """Global rows that neighbour ``k`` changes."""
        return self.rows[self.indptr[k] : self.indptr[k + 1]]

    def subset(self, index) -> Neighbours:
        """The neighbours ``index`` (an integer array), in that order."""
        index = np.asarray(index, dtype=np.int64)
        lengths = np.diff(self.indptr)[index]
        indptr = np.concatenate([[0], np.cumsum(lengths)]).astype(np.int64)
        starts = self.indptr[index]
        rows = (
            np.concatenate([self.rows[a : a + m] for a, m in zip(starts, lengths, strict=True)])
            if index.size and not np.all(lengths == 1)
            else self.rows[starts]
            if index.size
            else self.rows[:0]
        )
        return Neighbours(self.labels[index], indptr, rows, self.observed[index])

    def __len__(self) -> int:
        return self.labels.size

    @property
    def n_rows(self) -> np.ndarray:
        """Number of rows per neighbour."""
        return np.diff(self.indptr)

    def largest_block(self, offsets: np.ndarray, v: int) -> int:
        """The most rows of observed variable ``v`` that one neighbour changes."""
        if not self.rows.size:
            return 0
        inside = (self.rows >= offsets[v]) & (self.rows < offsets[v + 1])
        return int(np.add.reduceat(inside, self.indptr[:-1]).max())

    @classmethod
    def records(cls, ll: RecordLayout) -> Neighbours:
        """One neighbour per record (row)."""
        n = ll.n_rows
        observed = np.repeat(np.array(ll.names, dtype=object), np.diff(ll.offsets))
        if len(ll.names) == 1 and len(ll.record_dims(ll.names[0])) == 1:
            dim = ll.record_dims(ll.names[0])[0]
            labels = np.asarray(ll.datasets[ll.names[0]][dim].values)
        else:
            labels = np.array(ll.row_labels(), dtype=object)
        return cls(labels, np.arange(n + 1, dtype=np.int64), np.arange(n), observed)

    @classmethod
    def from_groups(cls, ll: RecordLayout, groups) -> Neighbours:
        """One neighbour per individual: all its rows in all observed variables.

        ``groups`` is a coordinate on every variable's records, one label per row (all variables
        end to end), or ``{observed_name: labels}`` shaped like each variable's records.
        """
        per_row = []
        for name in ll.names:
            da = ll.datasets[name]
            rec_dims = ll.record_dims(name)
            size = int(np.prod([da.sizes[d] for d in rec_dims]))
            if isinstance(groups, str):
                if groups not in da.coords:
                    raise KeyError(
                        f"groups={groups!r} is not a coordinate of log_likelihood variable "
                        f"{name!r} (its coordinates: {list(da.coords)}). Pass the name of a "
                        "coordinate that labels the individual of each record, or an array."
                    )
                coord = da[groups]
                extra = [d for d in coord.dims if d not in rec_dims]
                if extra:
                    raise ValueError(f"coordinate {groups!r} spans non-record dims {extra}")
                labels = coord.broadcast_like(da.isel(chain=0, draw=0, drop=True))
                labels = labels.transpose(*rec_dims).values.ravel()
            elif isinstance(groups, Mapping):
                if name not in groups:
                    raise KeyError(f"groups mapping has no entry for observed variable {name!r}")
                labels = np.asarray(groups[name]).ravel()
            else:
                per_row = None
                break
            if labels.size != size:
                raise ValueError(
                    f"groups for {name!r} have {labels.size} labels but it has {size} records"
                )
            per_row.append(labels)
        if per_row is None:
            labels_all = np.asarray(groups).ravel()
            if labels_all.size != ll.n_rows:
                raise ValueError(
                    f"groups has {labels_all.size} labels but the log-likelihood has "
                    f"{ll.n_rows} records (all observed variables laid end to end)"
                )
        else:
            labels_all = np.concatenate([np.asarray(p, dtype=object) for p in per_row])
        if pd.isna(pd.Series(labels_all, dtype=object)).any():
            raise ValueError("groups contain missing labels; every record needs an individual")
        codes, uniques = pd.factorize(pd.Series(labels_all, dtype=object), sort=False)
        order = np.argsort(codes, kind="stable")
        counts = np.bincount(codes, minlength=len(uniques))
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        row_var = np.searchsorted(ll.offsets, order, side="right") - 1
        observed = []
        for k in range(len(uniques)):
            vs = np.unique(row_var[indptr[k] : indptr[k + 1]])
            observed.append(ll.names[vs[0]] if vs.size == 1 else "*")
        labels = np.asarray(list(uniques))
        if labels.dtype == object and all(isinstance(u, str) for u in labels):
            labels = labels.astype(str)
        return cls(labels, indptr, order.astype(np.int64), np.array(observed, dtype=object))


#: Neighbour relations: remove a record (unbounded DP) or replace it (bounded DP).
NEIGHBOUR_RELATIONS = ("remove", "replace")


@dataclass(frozen=True)
class NeighbourOptions:
    """What a neighbour dataset is: which records change, and how.

    Parameters
    ----------
    relation : {"remove", "replace"}, default "remove"
        ``"remove"`` deletes one record (unbounded DP); ``"replace"`` changes it to each of
        ``replacements`` and reports the worst (bounded DP; refits use the worst).
    groups : str, array_like or dict, optional
        Leave-one-group-out: a coordinate name, one label per record, or
        ``{observed_name: labels}``; all of an individual's rows change together.
    replacements : array_like, PerRecord or dict, optional
        For ``"replace"``: candidate values each tried for every record;
        :class:`pymc_edp.PerRecord` for values given record by record; or a dict per
        observed variable. In the likelihood's support; default for 0/1 data: the flip.
    observed : str or list of str, optional
        Observed variables whose records define neighbours; default all.
    records : {"auto", "rows", "elements"}, default "auto"
        What a record is when an observed variable has several values per row (or is one
        multivariate observation): ``"auto"`` takes a multivariate observation's rows, or its
        values when it is a single row (a series), and a coupled likelihood's rows when it
        has one term per row (a filter's term per time step), else its values;
        ``"rows"`` the entries of the first axis; ``"elements"`` every value. The printout
        says what was taken (``res.records``).

    Examples
    --------
    >>> opts = edp.NeighbourOptions("replace", replacements=[0, 1], observed="y")
    >>> opts.relation, opts.observed
    ('replace', ('y',))
    >>> edp.NeighbourOptions.coerce("remove").relation
    'remove'
    >>> edp.NeighbourOptions.coerce({"groups": "school"}).groups
    'school'
    """

    relation: str = "remove"
    groups: object = None
    replacements: object = None
    observed: str | tuple[str, ...] | None = None
    records: str = "auto"

    def __post_init__(self):
        if not isinstance(self.relation, str) or self.relation not in NEIGHBOUR_RELATIONS:
            raise ValueError(
                f"relation must be one of {NEIGHBOUR_RELATIONS}, got {self.relation!r}"
            )
        if self.replacements is not None and self.relation != "replace":
            raise ValueError(
                "NeighbourOptions(replacements=...) is only used with relation='replace'"
            )
        if self.records not in RECORDS:
            raise ValueError(f"records must be one of {RECORDS}, got {self.records!r}")
        observed = self.observed
        if observed is not None:
            observed = (observed,) if isinstance(observed, str) else tuple(observed)
            if not observed:
                raise ValueError(
                    "NeighbourOptions(observed=...) is empty: name at least one observed "
                    "variable, or pass None"
                )
            object.__setattr__(self, "observed", observed)

    @classmethod
    def coerce(cls, value: NeighbourOptions | Mapping | str | None) -> NeighbourOptions:
        """``value`` as options: a relation name, a dict of the fields, or None (defaults)."""
        if isinstance(value, str):
            if value not in NEIGHBOUR_RELATIONS:
                raise ValueError(f"neighbour must be one of {NEIGHBOUR_RELATIONS}, got {value!r}")
            return cls(relation=value)
        if value is None:
            return cls()
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            known = {"relation", "groups", "replacements", "observed", "records"}
            unknown = sorted(set(value) - known)
            if unknown:
                raise TypeError(
                    f"unknown neighbour option(s) {unknown}; NeighbourOptions takes "
                    f"{sorted(known)}"
                )
            return cls(**value)
        raise TypeError(
            "neighbour= takes 'remove', 'replace', a NeighbourOptions or a dict of its fields, "
            f"got {type(value).__name__}"
        )

    def neighbours(self, ll: RecordLayout) -> Neighbours:
        """The neighbours of the records ``ll``: one per record, or one per group."""
        if self.groups is None:
            return Neighbours.records(ll)
        return Neighbours.from_groups(ll, self.groups)
