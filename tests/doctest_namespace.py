"""The names every docstring example may use without importing them.

The examples in ``pymc_edp``'s docstrings run with these names already defined (as NumPy's
run with ``np``), so that no example repeats the same set-up lines:

==========================  =====================================================
name                        value
==========================  =====================================================
``np``, ``pd``, ``xr``      NumPy, pandas, xarray
``pm``, ``az``              PyMC, ArviZ
``plt``                     ``matplotlib.pyplot`` (the Agg backend)
``edp``                     ``pymc_edp``
``load_eight_schools``      :func:`pymc_edp.datasets.load_eight_schools`
``idata``                   ``load_eight_schools()`` (a fresh copy for each example)
``res``                     ``edp.audit(idata, var_names="mu", bins=10, method="psis")``
``dbs``                     40 databases of 5 people, columns ``id`` and ``x`` (gamma
                            draws of a seeded generator; a fresh list for each example)
``samples``                 ``edp.query.query_samples(dbs, sum_query("x"), id_col="id")``
``tuned``                   a :class:`~pymc_edp.PriorTuningResult` built by hand:
                            ``sigma0`` tuned from 1.73 to 1.2 (epsilon 0.31, target
                            0.3), ``mean_shift`` 0.05 for ``mu``, warning ``"a caveat"``
==========================  =====================================================

A module's own names come first: an example sees its module's globals, then these.
"""

from __future__ import annotations

import functools

import matplotlib

matplotlib.use("Agg")

import arviz as az
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import pymc as pm
import xarray as xr
from support import tuning_result

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools


@functools.cache
def eight_schools_audit() -> edp.EDPResult:
    """The audit the examples call ``res`` (computed once per test session)."""
    # the shipped draws (R-hat 1.02 for mu) were sampled by PyMC, which reported it: the
    # audit does not warn again, its printout says it
    return edp.audit(
        load_eight_schools(), var_names="mu", bins=10, method="psis", progressbar=False
    )


def small_databases() -> list[pd.DataFrame]:
    """The 40 small databases the examples call ``dbs``."""
    rng = np.random.default_rng(0)
    return [pd.DataFrame({"id": range(5), "x": rng.gamma(2.0, size=5)}) for _ in range(40)]


@functools.cache
def _small_query_samples() -> xr.Dataset:
    from pymc_edp.query import query_samples, sum_query

    return query_samples(small_databases(), sum_query("x"), id_col="id", progressbar=False)


def namespace() -> dict:
    """A fresh dictionary of the names above."""
    return {
        "np": np,
        "pd": pd,
        "xr": xr,
        "pm": pm,
        "az": az,
        "plt": plt,
        "edp": edp,
        "load_eight_schools": load_eight_schools,
        "idata": load_eight_schools(),
        "res": eight_schools_audit(),
        "dbs": small_databases(),
        "samples": _small_query_samples().copy(deep=True),
        "tuned": tuning_result(
            trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
            utility=xr.DataTree.from_dict(
                {"mu": xr.Dataset({"mean_shift": 0.05, "audited": True})}
            ),
            warnings=("a caveat",),
        ),
    }
