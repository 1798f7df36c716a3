"""pymc-marketing's CLV models on CDNOW, fitted small, then audited.

The data: the CDNOW summary of 2,357 customers (Fader, Hardie & Lee 2005) as Lifetimes ships
it, ``lifetimes/datasets/cdnow_customers_summary_with_transactions.csv`` (columns ``ID, x,
t_x, T, zbar``: repeat purchases, recency and age in weeks, mean spend of the repeat
purchases). It is read from the installed package's folder, without importing Lifetimes.
These are the columns pymc-marketing's quickstart uses (``frequency, recency, T,
monetary_value``).

The models are built as pymc-marketing's docs build them (default priors, ``model.fit(data)``;
``model.model`` is the ``pm.Model`` and ``model.idata`` the fit):

- ``bgnbd``: ``BetaGeoModel`` on all 2,357 customers. Its likelihood is the distribution
  ``BetaGeoNBD`` observed on an (n, 2) array of (recency, frequency), one term per customer.
- ``paretonbd``: ``ParetoNBDModel``, the same data, ``ParetoNBD`` distribution (NUTS;
  pymc-marketing's default for this model is a MAP fit).
- ``gammagamma``: ``GammaGammaModel`` on the 946 customers with a repeat purchase
  (``frequency > 0``, as the docs do). Its likelihood is ``pm.Potential("likelihood", ...)``
  of shape (n,), reading the data as constants.

Sizes: ``--chains 2 --draws 300 --tune 300`` (default), nutpie where installed (``--pymc``
for PyMC's NUTS). Each model is audited with ``pymc_edp.audit(idata, model,
random_seed=1)``; ``--anatomy DIR`` writes graph dumps (:func:`libcommon.anatomy`).

Usage (in the venv of ``benchmarks/libraries/README.md``)::

    python benchmarks/libraries/clv.py
    python benchmarks/libraries/clv.py --models gammagamma --anatomy /tmp/anatomy
"""

from __future__ import annotations

import argparse
import importlib.util
import sys
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from libcommon import Timer, anatomy, audit_report, has_nutpie, stack

CDNOW = "cdnow_customers_summary_with_transactions.csv"


def cdnow_path() -> Path:
    """Where the installed Lifetimes keeps the CDNOW customer summary."""
    spec = importlib.util.find_spec("lifetimes")
    if spec is None or not spec.submodule_search_locations:
        raise ModuleNotFoundError(
            "Lifetimes is not installed: `pip install lifetimes` (only its data file is used)"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / "datasets" / CDNOW
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing from the Lifetimes install")
    return path


def cdnow():
    """The 2,357 customers: customer_id, frequency, recency, T, monetary_value."""
    import pandas as pd

    raw = pd.read_csv(cdnow_path())
    return pd.DataFrame(
        {
            "customer_id": raw["ID"].to_numpy(),
            "frequency": raw["x"].to_numpy(dtype=float),
            "recency": raw["t_x"].to_numpy(dtype=float),
            "T": raw["T"].to_numpy(dtype=float),
            "monetary_value": raw["zbar"].to_numpy(dtype=float),
        }
    )


def bgnbd(data):
    from pymc_marketing.clv import BetaGeoModel

    return BetaGeoModel(), data[["customer_id", "frequency", "recency", "T"]]


def paretonbd(data):
    from pymc_marketing.clv import ParetoNBDModel

    return ParetoNBDModel(), data[["customer_id", "frequency", "recency", "T"]]


def gammagamma(data):
    from pymc_marketing.clv import GammaGammaModel

    returning = data.query("frequency > 0")
    return GammaGammaModel(), returning[["customer_id", "monetary_value", "frequency"]]


BUILDERS = {"bgnbd": bgnbd, "paretonbd": paretonbd, "gammagamma": gammagamma}


def fit(clv_model, data, args):
    kw = dict(draws=args.draws, tune=args.tune, chains=args.chains)
    if not args.pymc and has_nutpie():
        kw["nuts_sampler"] = "nutpie"
    else:
        kw["cores"] = 1
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "invalid value encountered", RuntimeWarning)
        clv_model.fit(data, method="mcmc", progressbar=False, random_seed=args.seed, **kw)
    return clv_model.idata


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
    data = cdnow()
    print(
        f"CDNOW: {len(data)} customers from {cdnow_path()}, "
        f"{int((data['frequency'] > 0).sum())} with a repeat purchase"
    )
    results = []
    for name in args.models:
        print(f"\n===== {name}")
        clv_model, d = BUILDERS[name](data)
        print(f"{type(clv_model).__name__} on {len(d)} customers")
        if args.anatomy is not None:
            clv_model.build_model(d)
            with Timer() as t_an:
                text = anatomy(
                    clv_model.model,
                    f"pymc-marketing {type(clv_model).__name__} (CDNOW, {len(d)} customers)",
                    args.anatomy / f"clv_{name}.txt",
                )
            print(text)
            print(f"anatomy: {t_an.seconds:.1f} s")
        if args.no_audit:
            continue
        with Timer() as t_fit:
            idata = fit(clv_model, d, args)
        print(f"fit: {t_fit.seconds:.1f} s ({args.chains} x {args.draws}, tune {args.tune})")
        post = idata["posterior"]
        for v in post.data_vars:
            vals = np.asarray(post[v])
            if vals[0, 0].size == 1:
                print(f"  {v}: mean {vals.mean():.4g}")
        res = audit_report(name, idata, clv_model.model)
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
