"""Algorithm 1 of Burchard, Daoud & Dotterrer: the query with and without every individual.

:func:`query_samples` evaluates a query on every database ``X^j`` and every ``X^j_i``
(without individual ``i``'s rows). The result round-trips to netCDF, so that the expensive
part runs once.

References
----------
.. [1] Burchard, P., Daoud, A. and Dotterrer, D. (2020). Empirical Differential Privacy.
   arXiv:2011.05418, Algorithm 1 and section 4.
"""

from __future__ import annotations

import datetime
import inspect
import math
import numbers
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
import xarray as xr

from pymc_edp.base.validate import check_int
from pymc_edp.runtime.parallel import map_tasks, resolve_n_workers

__all__ = ["as_databases", "query_samples"]

Databases = Mapping[Hashable, pd.DataFrame] | Sequence[pd.DataFrame] | pd.DataFrame


def as_databases(
    databases: Databases, *, database_col: str | None = None
) -> tuple[list[Hashable], list[pd.DataFrame]]:
    """``(labels, frames)``: a mapping's keys, ``0..n-1``, or ``database_col``'s sorted values."""
    if isinstance(databases, pd.DataFrame):
        if database_col is None:
            raise ValueError("a single DataFrame needs database_col= to split it into databases")
        groups = databases.groupby(database_col, sort=True)
        labels = list(groups.groups)
        frames = [groups.get_group(k).drop(columns=database_col) for k in labels]
    elif isinstance(databases, Mapping):
        labels = list(databases)
        frames = [databases[k] for k in labels]
    else:
        frames = list(databases)
        labels = list(range(len(frames)))
    if len(frames) < 2:
        raise ValueError("at least two databases are needed")
    for f in frames:
        if not isinstance(f, pd.DataFrame):
            raise TypeError(f"databases must be pandas DataFrames, got {type(f).__name__}")
    return labels, frames


def _describe(labels: Sequence[Hashable] | None, j: int) -> str:
    """How a database is named in messages: its label, and its position if that differs."""
    if labels is None:
        return f"at position {j}"
    label = labels[j]
    if isinstance(label, int | np.integer) and int(label) == j:
        return f"{label!r}"
    return f"{label!r} (position {j})"


def _takes_rng(func: Callable) -> bool:
    """Whether ``func`` takes an ``rng`` argument (a randomised query)."""
    try:
        return "rng" in inspect.signature(func).parameters
    except (TypeError, ValueError):  # builtins, some callables
        return False


def _to_vector(value: Any) -> np.ndarray:
    arr = np.asarray(value, dtype=float).ravel()
    if arr.size == 0:
        raise ValueError("the query returned an empty result")
    return arr


@dataclass
class _Evaluator:
    """Picklable task runner (one database, one draw, a chunk of individuals)."""

    query: Callable[..., Any]
    id_col: str
    entropy: Any
    crn: bool
    takes_rng: bool
    loo_takes_rng: bool
    vectorised: bool
    labels: list[Hashable] | None = None

    def _rng(self, j: int, k: int, i: int) -> np.random.Generator:
        key = (j, k) if self.crn else (j, k, i)
        return np.random.default_rng(np.random.SeedSequence(self.entropy, spawn_key=key))

    def _raw(self, df, j, k, i):
        if self.takes_rng:
            return self.query(df, rng=self._rng(j, k, i))
        return self.query(df)

    def _full(self, df, j, k):
        raw = self._raw(df, j, k, 0)
        names = list(raw.index) if isinstance(raw, pd.Series) else None
        return _to_vector(raw), names

    def __call__(self, task):
        j, k, df, ids, positions, with_full = task
        full = None
        if with_full:
            try:
                full = self._full(df, j, k)
            except Exception as err:
                if len(df):
                    raise
                # An empty database is legitimate (nobody to remove): say which one it is.
                raise ValueError(
                    f"database {_describe(self.labels, j)} is empty (it has no rows) and "
                    "the query cannot be evaluated on an empty frame "
                    f"({type(err).__name__}: {err}); drop the empty database or make the "
                    "query return a value for an empty frame"
                ) from err
        if not len(ids):  # nobody audited here: an empty (0, n_components) block
            return j, k, full, ids, np.empty((0, 0 if full is None else full[0].size))
        if self.vectorised:
            kwargs = {"rng": self._rng(j, k, 0)} if self.loo_takes_rng else {}
            loo = self.query.leave_one_out(df, self.id_col, **kwargs).reindex(ids)
            values = np.asarray(loo, dtype=float).reshape(len(ids), -1)
            return j, k, full, ids, values
        ids_col = df[self.id_col].to_numpy()
        out = []
        for pos, i in zip(positions, ids, strict=True):
            keep = ids_col != i
            # Stream key 0 is the full database; individual number ``pos`` gets ``pos + 1``.
            out.append(_to_vector(self._raw(df.loc[keep], j, k, int(pos) + 1)))
        values = np.vstack(out) if out else np.empty((0, 0))
        return j, k, full, ids, values


def query_samples(
    databases: Databases,
    query: Callable[..., Any],
    *,
    id_col: str,
    database_col: str | None = None,
    individuals: Sequence[Hashable] | None = None,
    n_draws: int = 1,
    side_info: Callable[[pd.DataFrame], Any] | None = None,
    random_seed: int | np.random.SeedSequence | None = None,
    common_random_numbers: bool = True,
    executor: Any = None,
    chunk_size: int | None = None,
    progressbar: bool = True,
) -> xr.Dataset:
    """Evaluate a query on every database with and without every individual (Algorithm 1).

    Parameters
    ----------
    databases : mapping of DataFrames, sequence of DataFrames, or DataFrame
        The databases ``X^1..X^n``, independent draws from one distribution, labelled as
        :func:`as_databases` says. An empty one enters both samples with the query's
        (finite) value on an empty frame.
    query : callable
        ``query(df)`` returning a number or a vector (array, or :class:`pandas.Series` whose
        index names the components); randomised if it takes ``rng``, evaluated in one pass
        per database if it has ``leave_one_out`` (see :mod:`pymc_edp.query.queries`).
    id_col : str
        Column holding the individual identifier, shared across databases.
    database_col : str, optional
        Column naming the database of each row of a single DataFrame.
    individuals : sequence, optional
        Individuals to audit (default: every id seen); one in no database is refused.
    n_draws : int, default 1
        Evaluations per database of a randomised query ([1], Definition 2).
    side_info : callable, optional
        Adversary knowledge ``g(df)`` on each full database ([1], section 4), stored as
        ``side_info`` for :func:`~pymc_edp.query.privacy_profile`.
    random_seed : int or SeedSequence, optional
        Every evaluation gets its own child stream: results do not depend on the executor.
    common_random_numbers : bool, default True
        Evaluate with and without ``i`` on one database and draw with the same random
        stream: both distributions are unchanged, their difference much less noisy.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client
        See :func:`pymc_edp.runtime.parallel.map_tasks`.
    chunk_size : int, optional
        Individuals per task (default: a whole database when serial, else about four tasks
        per worker).
    progressbar : bool, default True

    Returns
    -------
    xarray.Dataset
        ``value`` (database, draw[, component]): ``f(X^j)``; ``value_without`` (individual,
        database, draw[, component]): ``f(X^j_i)``; ``present`` (individual, database);
        ``side_info`` (database) when requested.

    Raises
    ------
    ValueError
        If ids are missing or mix types (``3`` and ``"3"`` would be two people), a requested
        individual is in no database, every database is empty, or the query fails or is
        not finite on an empty one; the messages name the databases and ids.

    Examples
    --------
    Forty databases ``dbs`` of the same five individuals; the query is the sum of ``x``:

    >>> from pymc_edp.query import sum_query
    >>> samples = query_samples(dbs, sum_query("x"), id_col="id", progressbar=False)
    >>> dict(samples.sizes)
    {'database': 40, 'draw': 1, 'individual': 5}
    >>> dbs[0]["x"].round(3).tolist()
    [1.834, 2.638, 1.066, 3.981, 0.913]
    >>> round(samples["value"].isel(database=0, draw=0).item(), 3)
    10.432
    >>> samples["value_without"].isel(database=0, draw=0).round(3).to_numpy()
    array([8.598, 7.794, 9.366, 6.452, 9.519])
    """
    n_draws = _check_n_draws(n_draws)
    if isinstance(individuals, str | bytes):
        raise TypeError(
            f"individuals must be a sequence of ids, got the single string {individuals!r}; "
            f"write individuals=[{individuals!r}]"
        )
    labels, frames = as_databases(databases, database_col=database_col)
    id_index, present = _individuals(frames, labels, id_col, individuals)
    evaluator = _evaluator(query, id_col, random_seed, common_random_numbers, labels, n_draws)
    tasks = _tasks(frames, id_index, present, n_draws, evaluator.vectorised, executor, chunk_size)
    results = map_tasks(
        evaluator,
        tasks,
        executor=executor,
        progressbar=progressbar,
        description="Query with/without each individual",
    )
    value, without, names = _gather(results, id_index, present, n_draws)
    _check_finite(value, without, frames, labels, id_index)
    ds = _samples_dataset(value, without, names, present, labels, id_index)
    if side_info is not None:
        ds["side_info"] = ("database", _side_values(side_info, frames))
    ds.attrs.update(
        {
            "id_col": str(id_col),
            "query": _query_name(query),
            "n_draws": int(n_draws),
            "randomised": int(evaluator.takes_rng),
            "common_random_numbers": int(common_random_numbers),
            "vectorised": int(evaluator.vectorised),
        }
    )
    return ds


def _individuals(
    frames: list[pd.DataFrame],
    labels: list[Hashable],
    id_col: str,
    individuals: Sequence[Hashable] | None,
) -> tuple[pd.Index, np.ndarray]:
    """The individuals audited, and ``present`` (individual, database): who has rows where."""
    for j, f in enumerate(frames):
        if id_col not in f.columns:
            raise KeyError(f"id column {id_col!r} missing from database {_describe(labels, j)}")
    _check_ids(frames, labels, id_col)
    ids_per_db = [pd.unique(f[id_col].to_numpy()) for f in frames]
    _check_id_types(ids_per_db, labels, id_col)
    # Empty databases add no individual (and must not turn the ids' dtype to object).
    nonempty = [ids for ids in ids_per_db if ids.size]
    known = pd.unique(np.concatenate(nonempty)) if nonempty else np.array([])
    if individuals is None:
        all_ids = known
        try:
            all_ids = np.sort(all_ids)
        except TypeError:
            pass
    else:
        requested = list(individuals)
        if not requested:
            raise ValueError(
                "individuals is empty: give at least one id to audit, or individuals=None "
                "to audit everybody"
            )
        # Mixed types stay objects: numpy would turn [3, "7"] into ["3", "7"].
        mixed = len({_id_kind(v) for v in requested}) > 1
        all_ids = np.asarray(requested, dtype=object if mixed else None)
    id_index = pd.Index(all_ids)
    if not id_index.is_unique:
        raise ValueError("individuals must be unique")
    present = np.zeros((len(id_index), len(frames)), dtype=bool)
    for j, ids in enumerate(ids_per_db):
        loc = id_index.get_indexer(ids)
        present[loc[loc >= 0], j] = True
    if individuals is not None:
        _check_requested(id_index, present, known, id_col)
    return id_index, present


def _evaluator(
    query: Callable[..., Any],
    id_col: str,
    random_seed: int | np.random.SeedSequence | None,
    common_random_numbers: bool,
    labels: list[Hashable],
    n_draws: int,
) -> _Evaluator:
    takes_rng = _takes_rng(query)
    vectorised = callable(getattr(query, "leave_one_out", None))
    loo_takes_rng = vectorised and _takes_rng(query.leave_one_out)
    if n_draws > 1 and not takes_rng:
        raise ValueError("n_draws > 1 needs a randomised query (one accepting rng=)")
    seed = random_seed if isinstance(random_seed, np.random.SeedSequence) else None
    entropy = (seed or np.random.SeedSequence(random_seed)).entropy
    return _Evaluator(
        query, id_col, entropy, common_random_numbers, takes_rng, loo_takes_rng, vectorised, labels
    )


def _tasks(
    frames: list[pd.DataFrame],
    id_index: pd.Index,
    present: np.ndarray,
    n_draws: int,
    vectorised: bool,
    executor: Any,
    chunk_size: int | None,
) -> list[tuple]:
    """Tasks ``(database, draw, frame, individuals, their positions, with full?)``."""
    is_parallel = executor is not None and not (
        isinstance(executor, int) and resolve_n_workers(executor) == 1
    )
    n_db = len(frames)
    tasks = []
    for j, f in enumerate(frames):
        here_pos = np.flatnonzero(present[:, j])
        here = list(id_index[here_pos])
        for k in range(n_draws):
            if vectorised:
                tasks.append((j, k, f, here, here_pos, True))
                continue
            if chunk_size is not None:
                size = chunk_size
            elif is_parallel:
                # About four tasks per worker (a user's executor: one worker per local core).
                workers = resolve_n_workers(executor if isinstance(executor, int) else -1)
                size = max(1, math.ceil(len(here) * n_db * n_draws / (4 * workers)))
            else:
                size = max(len(here), 1)
            starts = range(0, len(here), size) if here else [0]
            for c, s in enumerate(starts):
                tasks.append((j, k, f, here[s : s + size], here_pos[s : s + size], c == 0))
    return tasks


def _gather(
    results: list[tuple], id_index: pd.Index, present: np.ndarray, n_draws: int
) -> tuple[np.ndarray, np.ndarray, list | None]:
    """``value`` (database, draw, component), ``value_without`` (individual, ...), names."""
    n_ind, n_db = present.shape
    n_comp = value = without = names = None
    for j, k, full_names, _ids, _vals in results:
        if full_names is not None:
            full, names = full_names
            if n_comp is None:
                n_comp = full.size
                value = np.full((n_db, n_draws, n_comp), np.nan)
                without = np.full((n_ind, n_db, n_draws, n_comp), np.nan)
            if full.size != n_comp:
                raise ValueError("the query returned results of different lengths")
            value[j, k] = full
    for j, k, _, ids, vals in results:
        if len(ids):
            if vals.shape[1] != n_comp:
                raise ValueError("the query returned results of different lengths")
            without[id_index.get_indexer(ids), j, k] = vals
    # Absent individuals leave the database unchanged: the full evaluation is reused.
    absent = ~present
    without[absent] = value[np.nonzero(absent)[1]]
    return value, without, names


def _check_finite(
    value: np.ndarray,
    without: np.ndarray,
    frames: list[pd.DataFrame],
    labels: list[Hashable],
    id_index: pd.Index,
) -> None:
    """Refuse non-finite query results, naming the empty databases or the individuals."""
    if np.all(np.isfinite(value)) and np.all(np.isfinite(without)):
        return
    bad_db = np.flatnonzero(~np.isfinite(value).all(axis=(1, 2)))
    empty_bad = [j for j in bad_db if len(frames[j]) == 0]
    if empty_bad:
        many = len(empty_bad) > 1
        raise ValueError(
            f"the query returned a non-finite value on database{'s' if many else ''} "
            f"{', '.join(_describe(labels, j) for j in empty_bad)}, which "
            f"{'are' if many else 'is'} empty (no rows); drop the empty database"
            f"{'s' if many else ''} or make the query return a finite value for an empty "
            "frame"
        )
    bad = ~np.isfinite(without).all(axis=(1, 2, 3))
    raise ValueError(
        "the query returned non-finite values (e.g. an empty database after removing an "
        f"individual); offending individuals: {list(id_index[bad][:10])}"
    )


def _samples_dataset(
    value: np.ndarray,
    without: np.ndarray,
    names: list | None,
    present: np.ndarray,
    labels: list[Hashable],
    id_index: pd.Index,
) -> xr.Dataset:
    """``value``, ``value_without`` and ``present`` (no ``component`` for a scalar query)."""
    n_comp = value.shape[-1]
    coords = {
        "database": _coord(labels),
        "individual": _coord(list(id_index)),
        "draw": np.arange(value.shape[1]),
    }
    if n_comp == 1:
        data_vars = {
            "value": (("database", "draw"), value[..., 0]),
            "value_without": (("individual", "database", "draw"), without[..., 0]),
        }
    else:
        coords["component"] = _component_names(names, n_comp)
        data_vars = {
            "value": (("database", "draw", "component"), value),
            "value_without": (("individual", "database", "draw", "component"), without),
        }
    data_vars["present"] = (("individual", "database"), present)
    ds = xr.Dataset(data_vars, coords=coords)
    ds["value"].attrs["description"] = "query on each database, f(X^j)"
    ds["value_without"].attrs["description"] = "query without the individual, f(X^j_i)"
    return ds


def _check_ids(frames: list[pd.DataFrame], labels: list[Hashable], id_col: str) -> None:
    """Refuse missing individual ids, and inputs where every database is empty."""
    missing = [(j, int(f[id_col].isna().sum())) for j, f in enumerate(frames)]
    missing = [(j, n) for j, n in missing if n]
    if missing:
        where = "; ".join(
            f"database {_describe(labels, j)}: {n} row{'s' if n > 1 else ''}" for j, n in missing
        )
        total = sum(n for _, n in missing)
        raise ValueError(
            f"missing individual ids in id column {id_col!r}: {total} row"
            f"{'s' if total > 1 else ''} with a missing (NaN/None) id ({where}); every row "
            "needs an individual id -- fill them in or drop those rows"
        )
    if all(len(f) == 0 for f in frames):
        raise ValueError(
            f"all {len(frames)} databases are empty (no rows), so there is no individual "
            f"to audit: databases {', '.join(_describe(labels, j) for j in range(len(frames)))}"
        )


def _check_n_draws(n_draws) -> int:
    """``n_draws`` as an ``int >= 1``, refused up front with a message saying what it takes."""
    advice = "use n_draws=1 for a deterministic query, or more for a randomised one"
    if isinstance(n_draws, bool) or not isinstance(n_draws, numbers.Real):
        raise TypeError(
            f"n_draws must be an integer >= 1 (evaluations per database), got "
            f"{type(n_draws).__name__} {n_draws!r}; {advice}"
        )
    try:
        return check_int(n_draws, "n_draws", 1)
    except ValueError:
        raise ValueError(
            f"n_draws must be an integer >= 1 (evaluations per database of the query), got "
            f"{n_draws!r}; {advice} (a query accepting rng=)"
        ) from None


# pandas.api.types.infer_dtype results of an object array that holds numbers only.
_NUMERIC_INFERRED = {"integer", "floating", "mixed-integer-float", "decimal", "complex", "boolean"}


def _id_kind(value: Any) -> str:
    """Which family of values an id belongs to; ids of different families never match."""
    if isinstance(value, str):
        return "strings"
    if isinstance(value, bytes):
        return "bytes"
    if isinstance(value, numbers.Number | np.bool_):
        return "numbers"
    if isinstance(value, datetime.date | np.datetime64):
        return "dates/times"
    return f"{type(value).__name__} objects"


def _kinds(ids: np.ndarray) -> dict[str, Any]:
    """The kinds of the unique ids of one database, each with an example id."""
    if not ids.size:
        return {}
    kind = ids.dtype.kind
    inferred = pd.api.types.infer_dtype(ids, skipna=False) if kind == "O" else ""
    if kind in "biufc" or inferred in _NUMERIC_INFERRED:
        return {"numbers": ids[0]}
    if kind == "U" or inferred == "string":
        return {"strings": ids[0]}
    out: dict[str, Any] = {}
    for v in ids:
        out.setdefault(_id_kind(v), v)
    return out


def _plain(value: Any) -> Any:
    """A NumPy scalar as the Python value it holds (for readable reprs in messages)."""
    return value.item() if isinstance(value, np.generic) else value


def _check_id_types(ids_per_db: list[np.ndarray], labels: list[Hashable], id_col: str) -> None:
    """Refuse ids of different types (``3`` and ``"3"`` would be two different people)."""
    where: dict[str, list[int]] = {}
    example: dict[str, Any] = {}
    within = []
    for j, ids in enumerate(ids_per_db):
        kinds = _kinds(ids)
        if len(kinds) > 1:
            within.append(j)
        for kind, v in kinds.items():
            where.setdefault(kind, []).append(j)
            example.setdefault(kind, v)
    if len(where) < 2:
        return

    def some(dbs: list[int]) -> str:
        names = ", ".join(_describe(labels, j) for j in dbs[:4])
        more = f" and {len(dbs) - 4} more" if len(dbs) > 4 else ""
        return f"database{'s' if len(dbs) > 1 else ''} {names}{more}"

    parts = [f"{kind} (e.g. {_plain(example[kind])!r}) in {some(d)}" for kind, d in where.items()]
    if within:
        many = len(within) > 1
        parts.append(
            f"{some(within)} mix{'' if many else 'es'} them within "
            f"{'themselves' if many else 'itself'}"
        )
    raise ValueError(
        f"the individual ids in id column {id_col!r} mix types: {'; '.join(parts)}. Ids of "
        "different types never match (the integer 3 and the string '3' would be counted as "
        "two different people), so every database must use one id type: convert the column "
        f"in all databases, e.g. df[{id_col!r}] = df[{id_col!r}].astype(str) (or "
        ".astype(int))"
    )


def _convert_like(value: Any, kind: str) -> list[Any]:
    """Candidate spellings of ``value`` as an id of ``kind`` (``"3"`` -> 3, 3 -> ``"3"``)."""
    out = []
    if kind == "numbers" and isinstance(value, str):
        for convert in (int, float):
            try:
                out.append(convert(value.strip()))
            except ValueError:
                pass
    elif kind == "strings" and isinstance(value, numbers.Number):
        out.append(str(_plain(value)))
        if isinstance(value, numbers.Real) and float(value).is_integer():
            out.append(str(int(value)))
    return out


def _check_requested(
    id_index: pd.Index, present: np.ndarray, known: np.ndarray, id_col: str
) -> None:
    """Refuse requested individuals who are in no database (their delta would be 0)."""
    missing = list(id_index[~present.any(axis=1)])
    if not missing:
        return
    known_index = pd.Index(known)
    sample = [_plain(v) for v in known[:5]]
    kind = _id_kind(known[0]) if known.size else None
    have = f"there are no ids in column {id_col!r}"
    if known.size:
        type_name = type(known[0]).__name__
        have = f"the ids in column {id_col!r} are {kind} of type {type_name}, e.g. {sample}"
    fix = "check the ids, or leave individuals=None to audit everybody"
    if kind is not None:
        fixed = []
        for v in id_index:
            if v in known_index and v not in missing:
                fixed.append(_plain(v))
                continue
            match = [c for c in _convert_like(v, kind) if c in known_index]
            if not match:
                break
            fixed.append(match[0])
        else:
            fix = f"did you mean individuals={fixed!r}?"
    shown = [_plain(v) for v in missing[:10]]
    raise ValueError(
        f"{len(missing)} of the {len(id_index)} requested individuals are in none of the "
        f"databases: {shown}{' ...' if len(missing) > 10 else ''}. An individual in no "
        "database cannot change any query result, so auditing them would report perfect "
        f"privacy (delta 0). Here {have}; {fix}"
    )


def _coord(values: list) -> np.ndarray:
    arr = np.asarray(values)
    if arr.dtype.kind in "iufbM":
        return arr
    return np.asarray([str(v) for v in values], dtype=object)


def _component_names(names, n_comp) -> np.ndarray:
    if names is not None and len(names) == n_comp:
        return np.asarray([str(c) for c in names], dtype=object)
    return np.asarray([str(i) for i in range(n_comp)], dtype=object)


def _side_values(side_info, frames) -> np.ndarray:
    vals = [side_info(f) for f in frames]
    arr = np.asarray(vals)
    if arr.ndim != 1:
        raise ValueError("side_info must return one value (number or label) per database")
    if arr.dtype.kind in "iufb":
        return arr.astype(float)
    return np.asarray([str(v) for v in vals], dtype=object)


def _query_name(query) -> str:
    name = getattr(query, "__name__", None)
    return name if name is not None else repr(query)
