"""Replacement values for ``neighbour="replace"``: candidates for every record, or per record."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

import numpy as np

__all__ = ["PerRecord", "candidates", "check_support"]


@dataclass(frozen=True)
class PerRecord:
    """Replacement values given record by record, for ``neighbour="replace"``.

    A plain list passed as ``replacements=`` always means candidates for every record, so
    its length never decides its meaning. ``values`` is shaped like the observed data, or
    ``(n_candidates, *observed_shape)`` (the worst is reported).

    Examples
    --------
    >>> edp.PerRecord(np.array([1.0, 0.0, 2.0])).values
    array([1., 0., 2.])
    """

    values: object


def candidates(
    replacements, name: str, observed: np.ndarray, *, integer: bool | None = None
) -> np.ndarray:
    """Replacement data sets for observed variable ``name``, shape ``(C, *observed.shape)``.

    With ``integer`` (default: ``observed``'s dtype) non-integer replacements are refused,
    as they would be truncated.
    """
    if integer is None:
        integer = np.asarray(observed).dtype.kind in "biu"
    if isinstance(replacements, Mapping):
        if name not in replacements:
            raise KeyError(f"replacements has no entry for observed variable {name!r}")
        replacements = replacements[name]
    if replacements is None:
        values = np.unique(
            observed[~np.isnan(observed)] if observed.dtype.kind == "f" else observed
        )
        if np.all(np.isin(values, (0, 1))):
            return (1 - observed)[None]
        raise ValueError(
            f"neighbour='replace' needs replacement values for {name!r}: its data are not 0/1 "
            "(for 0/1 data the default replaces each record by its flipped value). Pass "
            "replacements= as a list of candidate values (each tried for every record), or "
            "edp.PerRecord(values) with one value per record (shaped like the data) or "
            "(n_candidates, *data_shape); a dict maps observed variable names to these."
        )
    if isinstance(replacements, PerRecord):
        arr = _numeric(replacements.values, name)
        if arr.shape == observed.shape:
            arr = arr[None]
        elif not (arr.ndim == observed.ndim + 1 and arr.shape[1:] == observed.shape):
            raise ValueError(
                f"PerRecord replacements for {name!r} have shape {arr.shape}; expected the "
                f"data's shape {observed.shape} (one per record) or (n_candidates, "
                f"{', '.join(map(str, observed.shape))})"
            )
    else:
        arr = _numeric(replacements, name)
        if arr.ndim > 1:
            raise ValueError(
                f"replacements for {name!r} have shape {arr.shape}: a plain list or 1-d array "
                "lists candidate values tried for every record; wrap values given record by "
                "record in edp.PerRecord(...)"
            )
        arr = np.broadcast_to(
            arr.reshape((-1,) + (1,) * observed.ndim), (arr.size, *observed.shape)
        ).copy()
    if arr.shape[0] == 0:
        raise ValueError(f"replacements for {name!r} are empty: give at least one value")
    bad = arr[np.isfinite(arr) & (arr != np.round(arr))] if arr.dtype.kind == "f" else arr[:0]
    if integer and bad.size:
        raise ValueError(
            f"the data of {name!r} can only be integers (integer data, or a likelihood with "
            f"integer support) but replacements contain non-integer values (e.g. "
            f"{bad.ravel()[0].item()!r}); they would be truncated silently. Give integer "
            "replacement values inside the likelihood's support."
        )
    return arr


def _numeric(values, name: str) -> np.ndarray:
    try:
        arr = np.asarray(values)
    except ValueError as err:  # ragged lists
        raise ValueError(f"replacements for {name!r} are not an array: {err}") from None
    if arr.dtype.kind not in "biuf":
        raise TypeError(
            f"replacements for {name!r} must be numbers, got dtype {arr.dtype} ({values!r:.60})"
        )
    return arr


def check_support(alt: np.ndarray, candidates: np.ndarray, name: str) -> None:
    """Refuse replacement values where the likelihood is zero (or undefined) at every draw."""
    bad = ~np.isfinite(alt).any(axis=1)  # (candidate, term): never finite
    if not bad.any():
        return
    c, term = (int(i) for i in np.argwhere(bad)[0])
    flat = candidates[c].reshape(-1)
    value = np.asarray(flat[term] if term < flat.size else candidates[c]).tolist()
    raise ValueError(
        f"replacement value {value!r} for record {term} of {name!r} is outside the support of "
        "its likelihood (log p(y' | theta) is -inf or NaN at every posterior draw): give "
        "replacement values the data could take"
    )
