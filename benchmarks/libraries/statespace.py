"""pymc-extras' state-space models on the Nile flow, fitted small, then audited.

The models are written as pymc-extras' documentation writes them: a model template, priors
named after ``mod.param_names`` inside ``pm.Model(coords=mod.coords)``, then
``mod.build_statespace_graph(data)``, which adds ``pm.Data("data")`` and the observed variable
``obs``; ``pm.sample`` gives the idata. The data: statsmodels' Nile dataset (annual flow at
Aswan, 1871-1970, 100 years), in units of 100 million m^3 (``volume / 100``).

- ``local_level``: ``st.LevelTrend(order=1, innovations_order=1) + st.MeasurementError()``,
  the structural local-level model (Durbin & Koopman's Nile example). ``obs`` is a Kalman
  filter: one log-density term per year, log p(y_t | y_1..y_{t-1}).
- ``sarimax``: ``BayesianSARIMAX(order=(1, 0, 0), trend="c")``, the defaults (stationary
  initialisation). pymc-extras 0.15 registers a closed form (``StationaryVAR``) for a pure
  autoregression, not the filter.
- ``sarimax_me``: the same with ``measurement_error=True``: an AR(1) observed with noise,
  which takes the Kalman filter.
- ``ets``: ``BayesianETS(order=("A", "N", "N"))``, simple exponential smoothing (filter).

Sizes: ``--chains 2 --draws 300 --tune 300`` (default) with nutpie where installed. Each model
is then audited with ``pymc_edp.audit(idata, model, random_seed=1)`` and, with
``--anatomy DIR``, its graph is described (:func:`libcommon.anatomy`).

Usage (in the venv of ``benchmarks/libraries/README.md``)::

    python benchmarks/libraries/statespace.py
    python benchmarks/libraries/statespace.py --models local_level --anatomy /tmp/anatomy
    python benchmarks/libraries/statespace.py --no-audit --anatomy /tmp/anatomy
"""

from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from libcommon import Timer, anatomy, audit_report, sampler_kwargs, stack

warnings.filterwarnings("ignore", category=FutureWarning, module="pymc_extras")


def nile():
    """The Nile flow 1871-1970 as a one-column DataFrame with a yearly DatetimeIndex."""
    import pandas as pd
    import statsmodels.api as sm

    df = sm.datasets.nile.load_pandas().data
    y = pd.DataFrame(
        {"volume": df["volume"].to_numpy(dtype=float) / 100.0},
        index=pd.date_range("1871-01-01", periods=len(df), freq="YS"),
    )
    return y


def local_level(y):
    """Structural local level: level random walk plus measurement error."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc_extras.statespace import structural as st

    mod = (st.LevelTrend(order=1, innovations_order=1) + st.MeasurementError()).build(
        verbose=False
    )
    with pm.Model(coords=mod.coords) as model:
        pm.Deterministic("P0", pt.eye(1) * 10.0, dims=mod.param_dims["P0"])
        pm.Normal("initial_level_trend", 10.0, 5.0, dims=mod.param_dims["initial_level_trend"])
        pm.HalfNormal("sigma_level_trend", 1.0, dims=mod.param_dims["sigma_level_trend"])
        pm.HalfNormal("sigma_MeasurementError", 2.0)
        mod.build_statespace_graph(y)
    return mod, model


def sarimax(y, measurement_error: bool = False):
    """SARIMAX(1, 0, 0) with a constant (closed form), or with measurement error (filter)."""
    import pymc as pm
    from pymc_extras.statespace import BayesianSARIMAX

    mod = BayesianSARIMAX(
        order=(1, 0, 0), trend="c", measurement_error=measurement_error, verbose=False
    )
    with pm.Model(coords=mod.coords) as model:
        pm.Normal("ar_params", 0.0, 0.5, dims=mod.param_dims["ar_params"])
        # trend "c": the state intercept, mean = c / (1 - phi)
        pm.Normal("trend_params", 5.0, 5.0, dims=mod.param_dims["trend_params"])
        pm.HalfNormal("sigma_state", 2.0)
        if measurement_error:
            pm.HalfNormal("sigma_obs", 2.0)
        mod.build_statespace_graph(y)
    return mod, model


def ets(y):
    """ETS(A, N, N): simple exponential smoothing."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc_extras.statespace import BayesianETS

    mod = BayesianETS(order=("A", "N", "N"), endog_names=["volume"], verbose=False)
    with pm.Model(coords=mod.coords) as model:
        pm.Normal("initial_level", 10.0, 5.0)
        pm.Deterministic("P0", pt.eye(2) * 10.0, dims=mod.param_dims["P0"])
        pm.Beta("alpha", 2.0, 2.0)
        pm.HalfNormal("sigma_state", 2.0)
        mod.build_statespace_graph(y)
    return mod, model


BUILDERS = {
    "local_level": local_level,
    "sarimax": lambda y: sarimax(y, measurement_error=False),
    "sarimax_me": lambda y: sarimax(y, measurement_error=True),
    "ets": ets,
}


def fit(model, args):
    """A small fit with the pointwise log likelihood (what a user's audit starts from)."""
    import pymc as pm

    kw = sampler_kwargs(args.draws, args.tune, args.chains, args.seed, nutpie=not args.pymc)
    with model, warnings.catch_warnings():
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        idata = pm.sample(**kw)
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--models", nargs="*", default=list(BUILDERS), choices=list(BUILDERS))
    p.add_argument("--chains", type=int, default=2)
    p.add_argument("--draws", type=int, default=300)
    p.add_argument("--tune", type=int, default=300)
    p.add_argument("--seed", type=int, default=39)
    p.add_argument("--pymc", action="store_true", help="PyMC's NUTS instead of nutpie")
    p.add_argument("--anatomy", type=Path, help="write graph dumps into this folder")
    p.add_argument("--no-audit", action="store_true")
    args = p.parse_args(argv)
    print(stack())
    y = nile()
    print(f"Nile: {len(y)} years {y.index[0].year}-{y.index[-1].year}, volume / 100")
    results = []
    for name in args.models:
        print(f"\n===== {name}")
        with Timer() as t_build:
            _, model = BUILDERS[name](y)
        print(f"build: {t_build.seconds:.1f} s")
        if args.anatomy is not None:
            with Timer() as t_an:
                text = anatomy(
                    model,
                    f"pymc-extras statespace: {name} (Nile)",
                    args.anatomy / f"statespace_{name}.txt",
                )
            print(text)
            print(f"anatomy: {t_an.seconds:.1f} s")
        if args.no_audit:
            continue
        with Timer() as t_fit:
            idata = fit(model, args)
        post = idata["posterior"] if "posterior" in idata.children else idata.posterior
        print(f"fit: {t_fit.seconds:.1f} s ({args.chains} x {args.draws}, tune {args.tune})")
        for v in post.data_vars:
            vals = np.asarray(post[v])
            if vals[0, 0].size <= 3:
                print(f"  {v}: mean {np.round(vals.mean(axis=(0, 1)), 3)}")
        res = audit_report(name, idata, model)
        res["fit_seconds"] = t_fit.seconds
        results.append(res)
    print("\n===== summary")
    for r in results:
        head = (
            f"eps {r['epsilon']:.3f} worst {r['worst']} ({r['worst_parameter']}), "
            f"{r['verification']}"
            if "epsilon" in r
            else r["error"][:200]
        )
        print(f"{r['name']:12s} fit {r['fit_seconds']:6.1f} s audit {r['seconds']:6.1f} s  {head}")


if __name__ == "__main__":
    main()
