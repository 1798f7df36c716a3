"""Full-length verification refits started warm against cold, on exact references (issue 40).

The default audit refits the neighbour that sets epsilon at full length. Since issue 40 it
starts warm: at full-data draws, with the fit's mass matrix (PyMC) and a quarter of the
tuning. This script measures what that does to the headline against the exact B-EDP of
conjugate models, over audit seeds (the refits' seeds), warm against cold
(``VerifyOptions(warm_start=False)``) on the same fit:

- ``outlier``: y ~ N(mu, 1), mu ~ N(0, 10^2), 24 draws from N(0, 1) and a record at 6
  (removing it moves the posterior by 1.2 of its sds), B = 10;
- ``extreme``: the same with the record at 12 and B = 20 (exact epsilon above 20: the
  refit that sets it starts ~2.4 sds away from its posterior);
- ``bernoulli``: Charest & Han's Table 2 setting, Beta(0.5, 0.5) prior, 5 successes in 6,
  replacement, B = 10.

Run: python tests/reference/warm_verification.py [n_seeds] (prints the table the slow test
``tests/refit/test_warm.py::test_warm_verification_is_as_accurate_as_cold`` checks a part of).
"""

from __future__ import annotations

import sys
import warnings

import numpy as np
import pymc as pm

import pymc_edp as edp
from pymc_edp.conjugate import beta_binomial_edp, normal_normal_edp


def _normal(last: float, bins: int, seed: int = 40):
    y = np.append(np.random.default_rng(seed).normal(0.0, 1.0, 24), last)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(1000, chains=2, random_seed=seed, progressbar=False)
        pm.compute_log_likelihood(idata, progressbar=False)
    return model, idata, float(normal_normal_edp(y, 1.0, 0.0, 10.0, bins=bins)), {}


def _bernoulli(bins: int, seed: int = 40):
    y = np.array([1, 1, 1, 1, 1, 0])
    with pm.Model() as model:
        p = pm.Beta("p", 0.5, 0.5)
        pm.Bernoulli("y", p, observed=y)
        idata = pm.sample(1000, chains=2, random_seed=seed, progressbar=False)
        pm.compute_log_likelihood(idata, progressbar=False)
    exact = float(beta_binomial_edp(5, 1, 0.5, 0.5, bins, neighbour="replace"))
    return model, idata, exact, {"neighbour": "replace"}


CASES = {
    "outlier": (lambda: _normal(6.0, 10), 10),
    "extreme": (lambda: _normal(12.0, 20), 20),
    "bernoulli": (lambda: _bernoulli(10), 10),
}


def headlines(case: str, seeds) -> dict:
    """Headline epsilons of the default audit, warm and cold, per seed; and the exact one."""
    build, bins = CASES[case]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model, idata, exact, kw = build()
        out = {"exact": exact, "warm": [], "cold": []}
        for seed in seeds:
            for key, warm in (("warm", True), ("cold", False)):
                method = edp.Auto(verify=edp.VerifyOptions(warm_start=warm))
                res = edp.audit(
                    idata,
                    model,
                    bins=bins,
                    random_seed=int(seed),
                    method=method,
                    progressbar=False,
                    **kw,
                )
                out[key].append(float(res.epsilon))
    return out


def main(n_seeds: int = 20) -> None:
    print(
        f"{'case':10s} {'exact':>8s} {'warm mean':>10s} {'warm rmse':>10s} "
        f"{'cold mean':>10s} {'cold rmse':>10s}"
    )
    for case in CASES:
        h = headlines(case, range(n_seeds))
        row = [case, f"{h['exact']:8.3f}"]
        for key in ("warm", "cold"):
            v = np.asarray(h[key])
            rmse = float(np.sqrt(np.mean((v - h["exact"]) ** 2)))
            row += [f"{v.mean():10.3f}", f"{rmse:10.3f}"]
        print(" ".join(row), flush=True)


if __name__ == "__main__":
    main(int(sys.argv[1]) if len(sys.argv) > 1 else 20)
