"""The zoo's hand-written library models against the libraries' own, at the same parameters.

``tests/zoo_libraries.py`` writes pymc-extras' local level and pymc-marketing's Gamma-Gamma
and BG/NBD likelihoods with PyMC alone. This script evaluates each hand-written elementwise
log-density and the library's on the same data at several parameter values and prints the
largest absolute difference (float64: agreement means < 1e-9).

It also checks the statespace filter's handling of a missing year, which gives the exact
leave-one-year-out conditional of any Gaussian state-space model: with ``data[t]`` set to
NaN the filter skips year t, so ``log p(y_t | y_-t) = sum(logp(y)) - sum(logp(y, t missing))``;
for the local level it is compared with the closed form from the joint covariance
(Cov(y_s, y_u) = P0 + min(s, u) sigma_level^2 + [s = u] sigma_obs^2).

Usage (in the libraries' venv, ``benchmarks/libraries/README.md``)::

    python benchmarks/libraries/equivalence.py
"""

from __future__ import annotations

import sys
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "tests"))

from libcommon import stack  # noqa: E402

warnings.filterwarnings("ignore", category=FutureWarning)

PARAMS = {
    "local_level": [(11.0, 0.4, 1.2), (9.0, 1.0, 0.5), (10.5, 0.05, 2.0)],
    "gamma_gamma": [(6.0, 4.0, 15.0), (1.5, 0.8, 3.0), (0.3, 2.5, 40.0)],
    "bgnbd": [(0.8, 2.5, 0.25, 4.0), (1.5, 1.2, 1.0, 10.0), (0.2, 6.0, 0.05, 0.5)],
}


def _fn(model, out):
    """Compile ``out`` as a function of the model's untransformed free variables."""
    import pytensor

    (graph,) = model.replace_rvs_by_values([out])
    # evaluate at constrained values: feed each value var through its transform's backward
    inputs, repl = [], {}
    for rv in model.free_RVs:
        value = model.rvs_to_values[rv]
        x = rv.type(name=rv.name)
        tr = model.rvs_to_transforms.get(rv)
        repl[value] = tr.forward(x, *rv.owner.inputs) if tr is not None else x
        inputs.append(x)
    from pytensor.graph.replace import graph_replace

    (graph,) = graph_replace([graph], repl, strict=False)
    (graph,) = model.replace_rvs_by_values([graph])
    return pytensor.function(inputs, graph, on_unused_input="ignore"), [i.name for i in inputs]


def local_level():
    import pymc as pm
    import zoo_libraries as zl
    from statespace import local_level as extras_local_level
    from statespace import nile

    y = nile()
    _, ext = extras_local_level(y)
    hand = zl.local_level_model(y["volume"].to_numpy())
    (ext_lp,) = ext.logp(vars=[ext["obs"]], sum=False)
    (hand_lp,) = hand.logp(vars=[hand["y"]], sum=False)
    f_ext, ext_names = _fn(ext, ext_lp)
    f_hand, hand_names = _fn(hand, hand_lp)
    worst = 0.0
    for level0, sl, so in PARAMS["local_level"]:
        pe = {
            "initial_level_trend": np.array([level0]),
            "sigma_level_trend": np.array([sl]),
            "sigma_MeasurementError": np.array(so),
        }
        ph = {"level0": np.array(level0), "sigma_level": np.array(sl), "sigma_obs": np.array(so)}
        a = f_ext(*[pe[n] for n in ext_names])
        b = f_hand(*[ph[n] for n in hand_names])
        worst = max(worst, float(np.max(np.abs(a - b))))
    print(
        f"local level, hand-written scan vs pymc-extras obs (100 terms, 3 points): "
        f"max |diff| = {worst:.2e}"
    )

    # a missing year: the filter's own leave-one-out
    level0, sl, so = PARAMS["local_level"][0]
    pe = {
        "initial_level_trend": np.array([level0]),
        "sigma_level_trend": np.array([sl]),
        "sigma_MeasurementError": np.array(so),
    }
    values = y["volume"].to_numpy()
    full = float(np.sum(f_ext(*[pe[n] for n in ext_names])))
    n = len(values)
    t = np.arange(n)
    cov = 10.0 + np.minimum.outer(t, t) * sl**2 + np.eye(n) * so**2
    Q = np.linalg.inv(cov)
    g = Q @ (values - level0)
    cond_mean = values - g / np.diag(Q)
    cond_sd = 1.0 / np.sqrt(np.diag(Q))
    exact = -0.5 * np.log(2 * np.pi * cond_sd**2) - 0.5 * ((values - cond_mean) / cond_sd) ** 2
    errs = []
    for i in range(n):
        moved = values.copy()
        moved[i] = np.nan
        with ext:
            pm.set_data({"data": moved[:, None]})
        errs.append(full - float(np.sum(f_ext(*[pe[nm] for nm in ext_names]))) - exact[i])
    with ext:
        pm.set_data({"data": values[:, None]})
    print(
        f"pymc-extras local level, pm.set_data with year t NaN: sum(logp) - sum(logp, t "
        f"missing) vs the exact Gaussian log p(y_t | y_-t), 100 years: max |diff| = "
        f"{np.max(np.abs(errs)):.2e} (1913: {exact[1913 - 1871]:.4f}, 1916: "
        f"{exact[1916 - 1871]:.4f})"
    )


def gamma_gamma():
    import zoo_libraries as zl
    from clv import cdnow, gammagamma

    data = cdnow()
    lib, d = gammagamma(data)
    lib.build_model(d)
    ext = lib.model
    f_ext, ext_names = _fn(ext, ext.potentials[0])
    # the zoo's builder fits; rebuild its model on CDNOW's returning customers instead
    import pymc as pm
    import pytensor.tensor as pt

    x = pt.as_tensor_variable(d["frequency"].to_numpy())
    z_mean = pt.as_tensor_variable(d["monetary_value"].to_numpy())
    with pm.Model() as hand:
        p = pm.Weibull("p", alpha=2.0, beta=1.0)
        q = pm.Weibull("q", alpha=2.0, beta=1.0)
        v = pm.Weibull("v", alpha=2.0, beta=10.0)
        pot = pm.Potential(
            "likelihood",
            pt.gammaln(p * x + q)
            - pt.gammaln(p * x)
            - pt.gammaln(q)
            + q * pt.log(v)
            + (p * x - 1) * pt.log(z_mean)
            + (p * x) * pt.log(x)
            - (p * x + q) * pt.log(x * z_mean + v),
        )
    f_hand, hand_names = _fn(hand, pot)
    worst = 0.0
    for p_, q_, v_ in PARAMS["gamma_gamma"]:
        pt_ = {"p": np.array(p_), "q": np.array(q_), "v": np.array(v_)}
        a = f_ext(*[pt_[n] for n in ext_names])
        b = f_hand(*[pt_[n] for n in hand_names])
        worst = max(worst, float(np.max(np.abs(a - b))))
    # and the zoo's own builder writes the same expression (its source, not re-typed here)
    src = Path(zl.__file__).read_text()
    same = "(p * x + q) * pt.log(x * z_mean + v)" in src
    print(
        f"Gamma-Gamma Potential ({len(d)} customers, 3 points) vs pymc-marketing: "
        f"max |diff| = {worst:.2e}; zoo writes the same expression: {same}"
    )


def bgnbd():
    import pymc as pm
    import zoo_libraries as zl
    from clv import bgnbd as lib_bgnbd
    from clv import cdnow

    data = cdnow()
    lib, d = lib_bgnbd(data)
    lib.build_model(d)
    ext = lib.model
    (ext_lp,) = ext.logp(vars=[ext["recency_frequency"]], sum=False)
    f_ext, ext_names = _fn(ext, ext_lp)
    with pm.Model() as hand:
        alpha = pm.Weibull("alpha", alpha=2.0, beta=10.0)
        phi = pm.Uniform("phi_dropout", lower=0.0, upper=1.0)
        kappa = pm.Pareto("kappa_dropout", alpha=1.0, m=1.0)
        a = pm.Deterministic("a", phi * kappa)
        b = pm.Deterministic("b", (1.0 - phi) * kappa)
        r = pm.Weibull("r", alpha=2.0, beta=1.0)
        rf = pm.CustomDist(
            "recency_frequency",
            a,
            b,
            r,
            alpha,
            d["T"].to_numpy(),
            logp=zl.bgnbd_logp,
            signature="(),(),(),(),()->(2)",
            observed=np.stack((d["recency"], d["frequency"]), axis=1),
        )
    (hand_lp,) = hand.logp(vars=[rf], sum=False)
    f_hand, hand_names = _fn(hand, hand_lp)
    worst = 0.0
    for a_, b_, r_, al_ in PARAMS["bgnbd"]:
        kappa_, phi_ = a_ + b_, a_ / (a_ + b_)
        pt_ = {
            "alpha": np.array(al_),
            "r": np.array(r_),
            "phi_dropout": np.array(phi_),
            "kappa_dropout": np.array(kappa_),
        }
        a1 = f_ext(*[pt_[n] for n in ext_names])
        b1 = f_hand(*[pt_[n] for n in hand_names])
        worst = max(worst, float(np.max(np.abs(a1 - b1))))
    print(
        f"BG/NBD CustomDist ({len(d)} customers, 3 points) vs pymc-marketing BetaGeoNBD: "
        f"max |diff| = {worst:.2e}"
    )


def main():
    print(stack())
    local_level()
    gamma_gamma()
    bgnbd()


if __name__ == "__main__":
    main()
