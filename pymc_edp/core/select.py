"""Which posterior variables an audit bins: ArviZ's ``var_names`` rules, never data copies."""

from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass

import numpy as np
import pandas as pd
import xarray as xr

__all__ = [
    "CONSTANT",
    "DATA_COPY",
    "RECOVERED",
    "LeftOut",
    "drop_data_copies",
    "left_out_from_json",
    "left_out_message",
    "left_out_to_json",
    "recovered_names",
    "select_var_names",
    "unconstrained_copies",
]

#: Why a posterior variable, or some of its elements, is not binned: the same in every draw.
CONSTANT = "constant"
#: Why a posterior variable is not binned: it holds (a function of) the observed data.
DATA_COPY = "data copy"
#: An element whose draws differ by less than this, relative to its size, is constant (the
#: unit diagonal of an LKJ correlation matrix is 1 up to the last bit of a float).
CONSTANT_RTOL = 1e-12

#: Attribute of a posterior variable recovered from deterministics, not sampled
#: (:mod:`pymc_edp.model.recover`): the deterministics it was solved from.
RECOVERED = "pymc_edp_recovered_from"

#: PyMC names the value variable of a transformed ``x`` ``x_<transform>__`` (``sigma_log__``).
_VALUE_VAR = re.compile(r"^(?P<base>.+)_(?P<transform>[A-Za-z0-9]+)__$")


def unconstrained_copies(names) -> list[str]:
    """Names that are a transformed variable's unconstrained copy beside it (nutpie on PyMC 5).

    Examples
    --------
    >>> from pymc_edp.core.select import unconstrained_copies
    >>> unconstrained_copies(["lam", "lam_log__", "p_logodds__", "x__"])
    ['lam_log__']
    """
    names = list(names)
    return [n for n in names if (m := _VALUE_VAR.match(n)) and m.group("base") in names]


def recovered_names(posterior: xr.Dataset) -> list[str]:
    """The variables of ``posterior`` that were recovered, not sampled (:data:`RECOVERED`).

    Examples
    --------
    >>> from pymc_edp.core.select import RECOVERED, recovered_names
    >>> post = xr.Dataset({"a": ("draw", [1.0, 2.0]), "b": ("draw", [0.0, 1.0])})
    >>> post["b"].attrs[RECOVERED] = "a"
    >>> recovered_names(post)
    ['b']
    """
    return [name for name, da in posterior.data_vars.items() if RECOVERED in da.attrs]


def select_var_names(posterior: xr.Dataset, var_names, filter_vars) -> list[str]:
    """Posterior variables named by ``var_names``, with ArviZ's conventions.

    None: all but :func:`unconstrained_copies`; ``~name`` excludes; ``filter_vars`` is
    ``"like"`` (substrings) or ``"regex"``. Free variables recovered from deterministics
    (:mod:`pymc_edp.model.recover`) are not the fit's own and are never selected.
    """
    available = [a for a in posterior.data_vars if a not in set(recovered_names(posterior))]
    if var_names is None:
        copies = set(unconstrained_copies(available))
        return [a for a in available if a not in copies]
    if filter_vars not in (None, "like", "regex"):
        raise ValueError(f"filter_vars must be None, 'like' or 'regex', got {filter_vars!r}")
    if isinstance(var_names, str):
        var_names = [var_names]
    if not isinstance(var_names, list | tuple | set | np.ndarray | pd.Index):
        raise TypeError(
            f"var_names must be a string or a list of strings (as in ArviZ), got "
            f"{type(var_names).__name__} {var_names!r}"
        )
    var_names = list(var_names)
    if not all(isinstance(v, str) for v in var_names):
        raise TypeError(f"var_names must be a string or a list of strings, got {var_names!r}")
    negated = [v[1:] for v in var_names if v.startswith("~") and v not in available]
    kept = [v for v in var_names if not (v.startswith("~") and v not in available)]

    def matches(pattern: str, name: str) -> bool:
        if filter_vars == "like":
            return pattern in name
        if filter_vars == "regex":
            return re.search(pattern, name) is not None
        return pattern == name

    missing = [v for v in kept + negated if not any(matches(v, a) for a in available)]
    if missing:
        raise KeyError(f"var_names {missing} not found. The posterior has variables {available}.")
    if not var_names:
        raise ValueError("var_names is empty: name at least one variable, or pass None for all")
    selected = [a for a in available if any(matches(v, a) for v in kept)] if kept else available
    selected = [a for a in selected if not any(matches(v, a) for v in negated)]
    if not selected:
        raise ValueError(
            f"var_names={var_names!r} leaves no variable to audit; the posterior has {available}"
        )
    return selected


@dataclass(frozen=True)
class LeftOut:
    """A posterior variable, or some of its elements, that an audit does not bin.

    Attributes
    ----------
    variable : str
    reason : str
        :data:`CONSTANT` (the same in every draw: epsilon exactly 0) or :data:`DATA_COPY`
        (it holds observed data: publishing it can disclose records).
    elements : tuple of str
        The constant elements left out while the others are audited; empty: all of it.
    detail : str
        What was seen (``"1 in every draw"``).

    Examples
    --------
    >>> from pymc_edp.core.select import LeftOut
    >>> print(LeftOut("cutpoints", "constant", ("cutpoints[0]",), "0 in every draw").sentence())
    'cutpoints[0]' of 'cutpoints' is constant (0 in every draw): a constant carries no \
information about any record (its epsilon is exactly 0) and cannot be binned; the other \
elements of 'cutpoints' are audited
    """

    variable: str
    reason: str
    elements: tuple[str, ...] = ()
    detail: str = ""

    def sentence(self) -> str:
        """What is left out and why, in the words of the warning, the printout and the view."""
        detail = f" ({self.detail})" if self.detail else ""
        if self.reason == DATA_COPY:
            return (
                f"{self.variable!r} is a copy of the data{detail}: publishing it can disclose "
                "records exactly, so its epsilon is not 0"
            )
        why = (
            "a constant carries no information about any record (its epsilon is exactly 0) "
            "and cannot be binned"
        )
        if not self.elements:
            return f"{self.variable!r} is constant{detail}: {why}"
        names = ", ".join(repr(e) for e in self.elements)
        verb = "is" if len(self.elements) == 1 else "are"
        return (
            f"{names} of {self.variable!r} {verb} constant{detail}: {why}; the other elements "
            f"of {self.variable!r} are audited"
        )


def left_out_message(left_out) -> str:
    """The one sentence (warning, printout, HTML) naming what an audit left out ("" if nothing).

    Examples
    --------
    >>> from pymc_edp.core.select import LeftOut, left_out_message
    >>> left_out_message([LeftOut("y", "data copy", (), "it is an observed variable")])[:52]
    "Left out of the audit: 'y' is a copy of the data (it"
    """
    if not left_out:
        return ""
    return "Left out of the audit: " + "; ".join(lo.sentence() for lo in left_out) + "."


def left_out_to_json(left_out) -> str:
    """:class:`LeftOut` records as JSON text (for a netCDF attribute)."""
    return json.dumps([dataclasses.asdict(lo) for lo in left_out])


def left_out_from_json(text: str) -> tuple[LeftOut, ...]:
    """The :class:`LeftOut` records written by :func:`left_out_to_json`."""
    return tuple(
        LeftOut(
            str(d["variable"]), str(d["reason"]), tuple(map(str, d["elements"])), str(d["detail"])
        )
        for d in json.loads(text)
    )


def _constant_rows(draws: np.ndarray) -> np.ndarray:
    """Rows whose draws are all the same relative to their own size (tiny scales vary)."""
    if draws.shape[1] < 2:
        return np.zeros(draws.shape[0], bool)
    spread = np.ptp(draws, axis=1)
    scale = np.max(np.abs(draws), axis=1)
    return np.isfinite(spread) & (spread <= CONSTANT_RTOL * scale)


def _values_text(values: np.ndarray) -> str:
    distinct = np.unique(values)
    if distinct.size == 1:
        return f"{distinct[0]:.6g} in every draw"
    return "the same in every draw"


def drop_data_copies(
    draws: np.ndarray,
    var_of: list[str],
    *,
    explicit: bool,
    observed: dict,
    labels: list[str] | None = None,
    reads_data: dict[str, bool] | None = None,
) -> tuple[np.ndarray, list[str], list[LeftOut]]:
    """``(keep, messages, left_out)``: rows of the ``(parameter, sample)`` matrix to bin.

    A *data copy* (a variable named like an observed one, or with an element constant over
    draws that comes from the data) would read epsilon ~0 while disclosing records: left out
    whole with a warning, refused when named. A *constant* element not from the data (an LKJ
    unit diagonal) has epsilon exactly 0 and cannot be binned: left out, the variable's other
    elements audited. Whether it comes from the data: ``reads_data``
    (:func:`pymc_edp.model.pymc.reads_data`) where it names the variable, else whether it
    equals an observed value. ``explicit``: the variables were asked for by name.

    Examples
    --------
    >>> from pymc_edp.core.select import drop_data_copies
    >>> rng = np.random.default_rng(0)
    >>> draws = np.vstack([np.zeros(50), rng.normal(size=(2, 50))])
    >>> keep, _, left = drop_data_copies(
    ...     draws, ["c", "c", "c"], explicit=True, observed={"y": np.array([0.5, 2.0])},
    ...     labels=["c[0]", "c[1]", "c[2]"])
    >>> keep.tolist(), left[0].reason, left[0].elements
    ([False, True, True], 'constant', ('c[0]',))
    """
    numeric = [
        np.asarray(v, dtype=float).ravel()
        for v in observed.values()
        if np.asarray(v).dtype.kind in "biuf"
    ]
    data_values = np.concatenate(numeric) if numeric else np.empty(0)
    var_of = np.asarray(var_of)
    labels = np.asarray(labels if labels is not None else var_of, dtype=str)
    reads_data = reads_data or {}
    const = _constant_rows(draws)
    keep = np.ones(var_of.size, bool)
    left: list[LeftOut] = []
    for name in dict.fromkeys(var_of.tolist()):
        rows = var_of == name
        fixed = const[rows]
        if name in observed:
            detail = (
                "it is an observed variable (PyMC adds it to the posterior when the data have "
                "missing values): its draws hold the observed records verbatim"
            )
            left.append(LeftOut(name, DATA_COPY, (), detail))
            keep[rows] = False
            continue
        if not fixed.any():
            continue
        values = draws[rows][fixed, 0]
        n_fixed, n = int(fixed.sum()), int(rows.sum())
        if name in reads_data:
            copy = reads_data[name]
            how = (
                f"the model computes it from the data and {n_fixed} of its {n} element(s) "
                "are the same in every draw"
            )
        else:
            copy = bool(data_values.size and np.isin(values, data_values).any())
            how = (
                f"{n_fixed} of its {n} element(s) equal observed data values in every draw; "
                "pass model= so that the model's graph tells a constant from a copy of the data"
            )
        if copy:
            left.append(LeftOut(name, DATA_COPY, (), how))
            keep[rows] = False
        elif fixed.all():
            left.append(LeftOut(name, CONSTANT, (), _values_text(values)))
            keep[rows] = False
        else:
            elements = tuple(labels[rows][fixed].tolist())
            left.append(LeftOut(name, CONSTANT, elements, _values_text(values)))
            keep[np.flatnonzero(rows)[fixed]] = False
    if not left:
        return keep, [], []
    copies = sorted(lo.variable for lo in left if lo.reason == DATA_COPY)
    if explicit and copies:
        why = "; ".join(lo.sentence() for lo in left if lo.reason == DATA_COPY)
        raise ValueError(
            f"var_names asks for posterior variable(s) {copies} that cannot be audited by "
            f"binning their draws: {why}. Leave them out of var_names."
        )
    message = left_out_message(left)
    if not keep.any():
        raise ValueError(
            f"no posterior variable is left to audit. {message} Name variables with draws "
            "that vary in var_names."
        )
    return keep, [message], left
