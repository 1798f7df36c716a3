"""Neighbour datasets: which log-likelihood rows each record or individual changes."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import ClassVar, Protocol

import numpy as np
import pandas as pd
import xarray as xr

from pymc_edp.core.replace import candidates

__all__ = [
    "RELATIONS",
    "Neighbours",
    "RecordLayout",
    "Relation",
    "Remove",
    "Replace",
    "neighbour_words",
]

#: What a record of a multivariate or coupled observation is (``Relation(records=)``).
RECORDS = ("auto", "rows", "elements")


class RecordLayout(Protocol):
    """The records of every observed variable, laid end to end as rows.

    What :class:`~pymc_edp.core.loglik.LogLikelihood` satisfies (see there).
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
        if not index.size:
            rows = self.rows[:0]
        elif np.all(lengths == 1):
            rows = self.rows[starts]
        else:
            rows = np.concatenate(
                [self.rows[a : a + m] for a, m in zip(starts, lengths, strict=True)]
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

        ``groups``: as :class:`Relation`'s, one label per row of all variables end to end.
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


#: Relations by name (``neighbour="remove"``): every subclass of :class:`Relation` with a name.
RELATIONS: dict[str, type[Relation]] = {}


@dataclass(frozen=True, kw_only=True)
class Relation:
    """What a neighbour dataset is: which records change, and how.

    A relation acts on rows of the pointwise log-likelihood: one neighbour per record, or
    one per individual with ``groups``. It owns its candidates (the data values a neighbour
    tries, none for a removal), its label and words, and its part of a refit's fingerprint.
    :class:`Remove` and :class:`Replace` are the two of the papers; a subclass with a
    ``name`` adds one (docs: "Adding a neighbour relation").

    Parameters
    ----------
    groups : str, array_like or dict, optional
        Leave-one-group-out: a coordinate name, one label per record, or
        ``{observed_name: labels}``; all of an individual's rows change together.
    observed : str or list of str, optional
        Observed variables whose records define neighbours; default all.
    records : {"auto", "rows", "elements"}, default "auto"
        What a record is when an observed variable has several values per row (or is one
        multivariate observation): ``"auto"`` takes a multivariate observation's rows, or its
        values when it is a single row (a series), and a coupled likelihood's rows when it
        has one term per row (a filter's term per time step), else its values;
        ``"rows"`` the entries of the first axis; ``"elements"`` every value. The printout
        says what was taken (``res.records``).

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 2: neighbours).

    Examples
    --------
    >>> rel = edp.Relation.coerce({"relation": "replace", "replacements": [0, 1]})
    >>> type(rel).__name__, rel.label, rel.n_candidates
    ('Replace', 'replace', 1)
    >>> edp.Relation.coerce("remove") == edp.Remove()
    True
    """

    groups: object = None
    observed: str | tuple[str, ...] | None = None
    records: str = "auto"
    #: Per candidate, the log-likelihood arrays at its values (:meth:`with_candidates`).
    _logliks: tuple = field(default=((),), init=False, repr=False, compare=False)
    #: Candidate values per observed variable, ``(C, *shape)`` (:meth:`with_candidates`).
    _values: Mapping = field(default_factory=dict, init=False, repr=False, compare=False)

    #: The relation's name (``neighbour=name``) and what one neighbour is, in words.
    name: ClassVar[str] = ""
    words: ClassVar[str] = ""
    #: Whether a neighbour's data carry new values (else its records are left out).
    replaces: ClassVar[bool] = False

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            RELATIONS[cls.name] = cls

    def __post_init__(self):
        if type(self) is Relation or not self.name:
            raise TypeError("Relation is a base class: use edp.Remove() or edp.Replace(...)")
        if self.records not in RECORDS:
            raise ValueError(f"records must be one of {RECORDS}, got {self.records!r}")
        observed = self.observed
        if observed is not None:
            observed = (observed,) if isinstance(observed, str) else tuple(observed)
            if not observed:
                raise ValueError(
                    f"{type(self).__name__}(observed=...) is empty: name at least one observed "
                    "variable, or pass None"
                )
            object.__setattr__(self, "observed", observed)

    @classmethod
    def coerce(cls, value: Relation | Mapping | str | None) -> Relation:
        """``value`` as a relation: a relation, its name, a dict of its fields, or None.

        A dict names the relation under ``"relation"`` (default ``"remove"``).
        """
        if value is None:
            return Remove()
        if isinstance(value, Relation):
            return value
        if isinstance(value, str):
            if value not in RELATIONS:
                raise ValueError(f"neighbour must be one of {tuple(RELATIONS)}, got {value!r}")
            return RELATIONS[value]()
        if isinstance(value, Mapping):
            return NeighbourOptions(**value)
        raise TypeError(
            "neighbour= takes edp.Remove(...), edp.Replace(...), a relation's name "
            f"({', '.join(map(repr, RELATIONS))}) or a dict of its fields, got "
            f"{type(value).__name__}"
        )

    @property
    def relation(self) -> str:
        """The relation's name (what ``NeighbourOptions.relation`` was in version 0.8)."""
        return self.name

    @property
    def label(self) -> str:
        """The relation as results report it: its name, ``" (groups)"`` with groups."""
        return self.name if self.groups is None else f"{self.name} (groups)"

    def neighbours(self, ll: RecordLayout) -> Neighbours:
        """The neighbours of the records ``ll``: one per record, or one per group."""
        if self.groups is None:
            return Neighbours.records(ll)
        return Neighbours.from_groups(ll, self.groups)

    def fingerprint(self) -> dict[str, str | None]:
        """The relation's part of the refits' checkpoint configuration (subclasses add theirs)."""
        return {"neighbour": self.name, "groups": None if self.groups is None else "given"}

    def candidate_values(self, name: str, y: np.ndarray, integer: bool) -> np.ndarray | None:
        """Candidate data sets of observed variable ``name``, ``(C, *y.shape)``; None: a removal.

        ``integer``: whether the data can only be integers.
        """
        return None

    def with_candidates(self, values: Mapping, logliks) -> Relation:
        """A copy bound to the data: its candidate values and their log-likelihoods.

        ``values``: per observed variable, ``(C, *shape)``; ``logliks``: per candidate, the
        log-likelihood arrays at its values (``[]``: none, without a factorised likelihood).
        """
        out = copy.copy(self)
        object.__setattr__(out, "_values", dict(values))
        object.__setattr__(out, "_logliks", tuple(tuple(a) for a in logliks) or ((),))
        return out

    @property
    def n_candidates(self) -> int:
        """Candidates each neighbour tries (the worst is reported); 1 for a removal."""
        return len(self._logliks)

    @property
    def candidates(self) -> dict:
        """Candidate values per observed variable, ``(C, *shape)`` (empty for a removal)."""
        return dict(self._values)

    def replacement(self, c: int) -> list | None:
        """The log-likelihood arrays at candidate ``c``, per variable (None: a removal)."""
        return list(self._logliks[c]) or None

    def values(self, c: int) -> dict | None:
        """Candidate ``c``'s data per observed variable (what its refit observes), or None."""
        if not self._values:
            return None
        return {n: v[min(int(c), v.shape[0] - 1)] for n, v in self._values.items()}

    def reads_rows_once(self) -> bool:
        """Whether several candidates share one read of the neighbours' rows at the data."""
        return self.n_candidates > 1 and bool(self._logliks[0])


@dataclass(frozen=True)
class Remove(Relation):
    """One record (or one individual's rows) deleted: unbounded DP.

    Parameters
    ----------
    groups : str, array_like or dict, optional
        Leave-one-group-out (as :class:`Relation`): ``Remove("school")`` removes each
        school's rows together.
    observed, records
        As :class:`Relation`.

    Examples
    --------
    >>> edp.Remove().label, edp.Remove("school").label
    ('remove', 'remove (groups)')
    """

    groups: object = field(default=None, kw_only=False)

    name: ClassVar[str] = "remove"
    words: ClassVar[str] = "record removed"


@dataclass(frozen=True)
class Replace(Relation):
    """One record changed to each of its replacements, the worst reported: bounded DP.

    Parameters
    ----------
    replacements : array_like, PerRecord or dict, optional
        Candidate values each tried for every record; :class:`pymc_edp.PerRecord` for
        values given record by record; or a dict per observed variable. In the likelihood's
        support; default for 0/1 data: the flip. Refits use each neighbour's worst.
    groups, observed, records
        As :class:`Relation`.

    Examples
    --------
    >>> rel = edp.Replace([0, 1], observed="y")
    >>> rel.label, rel.observed
    ('replace', ('y',))
    """

    replacements: object = None

    name: ClassVar[str] = "replace"
    words: ClassVar[str] = "record replaced"
    replaces: ClassVar[bool] = True

    def candidate_values(self, name: str, y: np.ndarray, integer: bool) -> np.ndarray:
        """The replacements of ``name`` (:func:`~pymc_edp.core.replace.candidates`)."""
        return candidates(self.replacements, name, y, integer=integer)


def neighbour_words(label: str) -> str:
    """What one neighbour is, in words, from a result's relation label.

    Examples
    --------
    >>> from pymc_edp.core.neighbours import neighbour_words
    >>> neighbour_words("remove"), neighbour_words("replace (groups)")
    ('record removed', "individual's records replaced")
    """
    name, groups = str(label).removesuffix(" (groups)"), str(label).endswith(" (groups)")
    cls = RELATIONS.get(name)
    if cls is None:
        return str(label)
    return cls.words.replace("record", "individual's records", 1) if groups else cls.words


def NeighbourOptions(  # the class of version 0.8, kept as its constructor
    relation: str = "remove", *, replacements=None, **fields
) -> Relation:
    """The relation named ``relation`` with ``fields``: version 0.8's spelling.

    ``NeighbourOptions("replace", replacements=v, ...)`` is ``Replace(v, ...)``.

    Examples
    --------
    >>> edp.NeighbourOptions("replace", replacements=[0, 1]) == edp.Replace([0, 1])
    True
    """
    if not isinstance(relation, str) or relation not in RELATIONS:
        raise ValueError(f"relation must be one of {tuple(RELATIONS)}, got {relation!r}")
    cls = RELATIONS[relation]
    unknown = sorted(set(fields) - {"groups", "observed", "records"})
    if unknown:
        raise TypeError(
            f"unknown neighbour option(s) {unknown}; a relation takes groups, observed, "
            "records (and replacements for 'replace')"
        )
    if replacements is not None:
        if not cls.replaces:
            raise ValueError(f"replacements= are for a relation that replaces, not {relation!r}")
        fields["replacements"] = replacements
    return cls(**fields)
