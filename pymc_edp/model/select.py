"""Which posterior variables an audit bins: ArviZ's ``var_names`` rules, never data copies."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import xarray as xr

__all__ = ["drop_data_copies", "select_var_names", "unconstrained_copies"]

#: PyMC names the value variable of a transformed ``x`` ``x_<transform>__`` (``sigma_log__``).
_VALUE_VAR = re.compile(r"^(?P<base>.+)_(?P<transform>[A-Za-z0-9]+)__$")


def unconstrained_copies(names) -> list[str]:
    """Names that are a transformed variable's unconstrained value beside the variable.

    nutpie on PyMC 5 stores them in the posterior (``lam_log__`` next to ``lam``): the same
    draws, transformed, not a parameter of the model.

    Examples
    --------
    >>> from pymc_edp.model.select import unconstrained_copies
    >>> unconstrained_copies(["lam", "lam_log__", "p_logodds__", "x__"])
    ['lam_log__']
    """
    names = list(names)
    out = []
    for name in names:
        m = _VALUE_VAR.match(name)
        if m and m.group("base") in names:
            out.append(name)
    return out


def select_var_names(posterior: xr.Dataset, var_names, filter_vars) -> list[str]:
    """Posterior variables named by ``var_names``, with ArviZ's conventions.

    ``None`` selects every variable but the unconstrained copies of transformed ones
    (:func:`unconstrained_copies`); names starting with ``~`` are excluded (when every name
    is negated, all others are kept); ``filter_vars="like"`` matches substrings and
    ``"regex"`` regular expressions.
    """
    available = list(posterior.data_vars)
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


def drop_data_copies(
    draws: np.ndarray, var_of: list[str], *, explicit: bool, observed: dict
) -> tuple[np.ndarray, list[str]]:
    """Rows of the ``(parameter, sample)`` matrix to keep: not copies of the data.

    A posterior variable named like an observed variable (PyMC adds one when the data have
    missing values: it holds the observed records verbatim), or with an element that is the
    same in every draw, would get epsilon ~ 0 (one merged bin) although publishing it can
    disclose records exactly. By default they are left out with a warning; asked for by name
    they are refused.

    Returns
    -------
    keep : ndarray of bool, shape (n_parameters,)
    messages : list of str
    """
    numeric = [
        np.asarray(v, dtype=float).ravel()
        for v in observed.values()
        if np.asarray(v).dtype.kind in "biuf"
    ]
    data_values = np.concatenate(numeric) if numeric else np.empty(0)
    var_of = np.asarray(var_of)
    const = np.all(draws == draws[:, :1], axis=1) if draws.shape[1] > 1 else np.zeros(0, bool)
    flagged: dict[str, str] = {}
    for name in dict.fromkeys(var_of.tolist()):
        if name in observed:
            flagged[name] = (
                "it is an observed variable (PyMC adds it to the posterior when the data have "
                "missing values): its draws hold the observed records verbatim"
            )
            continue
        rows = var_of == name
        fixed = const[rows] if const.size else np.zeros(0, bool)
        if not fixed.any():
            continue
        n_fixed, n = int(fixed.sum()), int(rows.sum())
        if data_values.size and np.isin(draws[rows][fixed, 0], data_values).any():
            flagged[name] = (
                f"{n_fixed} of its {n} element(s) equal observed data values in every draw"
            )
        else:
            flagged[name] = (
                f"{n_fixed} of its {n} element(s) are the same in every draw (a constant or a "
                "copy of data), so their epsilon would read 0 whatever they reveal"
            )
    keep = ~np.isin(var_of, list(flagged))
    if not flagged:
        return keep, []
    why = "; ".join(f"{k}: {v}" for k, v in flagged.items())
    if explicit:
        raise ValueError(
            f"var_names asks for posterior variable(s) {sorted(flagged)} that cannot be "
            f"audited by binning their draws ({why}). Publishing them can disclose records "
            "exactly; their epsilon is not 0. Leave them out of var_names."
        )
    if not keep.any():
        raise ValueError(f"no posterior variable is left to audit: {why}")
    message = (
        f"left out of the audit: posterior variable(s) {sorted(flagged)} ({why}). Such a "
        "variable is not private at epsilon 0: publishing it can disclose records exactly."
    )
    return keep, [message]
