"""Cost of the leave-one-out conditionals of a coupled likelihood: a 1,000-record GP.

``pm.gp.Marginal`` over ``n`` records (ExpQuad kernel plus noise). Each posterior draw needs
every record's conditional ``log p(y_i | y_-i, theta)``; :mod:`pymc_edp.model.conditional`
builds it from the gradient and Hessian of PyMC's own log-density in ``y``:

- hyperparameters estimated (the kernel depends on the draw): a Cholesky factorisation and
  ``n`` triangular solves per draw, order ``n^3``;
- hyperparameters fixed: the Hessian is a constant, folded once when compiling, and each draw
  costs one gradient (order ``n^2``).

Baseline, in the same run: the same conditionals computed directly with SciPy from the
covariance matrix (``cho_factor``, the inverse's diagonal and ``Q (y - mu)``), the floor for a
dense Gaussian. The draws are synthetic (the cost does not depend on how they were sampled).

Second table, the routes a coupled likelihood of no closed form takes
(:class:`pymc_edp.model.coupled.CoupledLikelihood`), on random walks of ``--walk-n`` records
written as ``pm.CustomDist`` (one term per step, as users write sequential likelihoods):

- Gaussian steps, proven quadratic from the graph (the closed form, the baseline);
- the same walk forced through the check at posterior draws ("gaussian (checked)") and
  through adaptive quadrature: cost per record-draw, and the largest difference from the
  closed form (the quadrature's stated tolerance is a relative error of 1e-9 per integral);
- skew-normal steps (not Gaussian at the draws): quadrature, its cost per record-draw.

Usage::

    python benchmarks/bench_coupled.py              # n = 1,000, 20 draws timed (~3 minutes)
    python benchmarks/bench_coupled.py --n 300 --walk-n 50
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing", category=FutureWarning)


def _stack() -> str:
    import arviz
    import pymc
    import pytensor
    import xarray

    return (
        f"pymc {pymc.__version__} | pytensor {pytensor.__version__} | arviz "
        f"{arviz.__version__} | xarray {xarray.__version__} | numpy {np.__version__}"
    )


def _model(x, y, fixed: bool):
    import pymc as pm

    with pm.Model() as model:
        if fixed:
            ls, eta = 1.0, 1.0
        else:
            ls = pm.Gamma("ls", 4, 4)
            eta = pm.HalfNormal("eta", 2)
        mu = pm.Normal("mu", 0, 2)
        cov = eta**2 * pm.gp.cov.ExpQuad(1, ls=ls)
        gp = pm.gp.Marginal(mean_func=pm.gp.mean.Constant(mu), cov_func=cov)
        gp.marginal_likelihood("y", X=x[:, None], y=y, sigma=0.3)
    return model


def _direct(x, y, mu, ls, eta):
    """The conditionals from the covariance matrix (SciPy), one draw."""
    from scipy.linalg import cho_factor, cho_solve

    cov = eta**2 * np.exp(-0.5 * (x[:, None] - x[None, :]) ** 2 / ls**2)
    cov[np.diag_indices_from(cov)] += 0.09 + 1e-6
    factor = cho_factor(cov, lower=True)
    g = cho_solve(factor, y - mu)
    q = np.diag(cho_solve(factor, np.eye(x.size)))
    return 0.5 * np.log(q / (2 * np.pi)) - 0.5 * g**2 / q


def _walk(y, skew: bool):
    import pymc as pm

    def logp(v, sigma, alpha):
        steps = v[1:] - v[:-1]
        dist = (
            pm.SkewNormal.dist(mu=0.0, sigma=sigma, alpha=alpha)
            if skew
            else pm.Normal.dist(0.0, sigma)
        )
        return pm.logp(dist, steps).sum() + pm.logp(pm.Normal.dist(0.0, 10.0), v[0])

    with pm.Model() as model:
        sigma = pm.HalfNormal("sigma", 1.0)
        alpha = pm.Normal("alpha", 0.0, 3.0) if skew else 0.0
        pm.CustomDist("y", sigma, alpha, logp=logp, observed=y)
    return model


def routes(n: int, draws: int) -> None:
    """Cost per record-draw of each route, and its difference from the closed form."""
    import xarray as xr

    from pymc_edp.model.coupled import CoupledLikelihood
    from pymc_edp.model.structure import read_structure

    rng = np.random.default_rng(20261128)
    y = np.cumsum(rng.normal(0, 0.5, n))
    post = {
        "sigma": rng.uniform(0.4, 0.6, (1, draws)),
        "alpha": rng.uniform(2.0, 6.0, (1, draws)),
    }
    rows = []
    for label, skew, force in [
        ("Gaussian walk, proven (baseline)", False, None),
        ("Gaussian walk, checked", False, "checked"),
        ("Gaussian walk, quadrature", False, "quadrature"),
        ("skew-normal walk, quadrature", True, None),
    ]:
        model = _walk(y, skew)
        names = [v.name for v in model.free_RVs]
        posterior = xr.Dataset({k: (("chain", "draw"), post[k]) for k in names})
        lik = CoupledLikelihood(model, "y", read_structure(model, model["y"]))
        if force is not None:  # the proof ignored: checked at the draws, or not even that
            lik.route = "gaussian (checked)"
        if force == "quadrature":
            lik._quadratic = lambda draws, fd: False
        lik.conditionals(posterior.isel(draw=[0]))  # compiles
        seconds = np.inf
        for _ in range(3):  # the fastest of three
            t0 = time.perf_counter()
            out = lik.conditionals(posterior)
            seconds = min(seconds, time.perf_counter() - t0)
        rows.append((label, out.route, seconds / (n * draws), out.at_data))
    base = rows[0][2]
    print(f"\nRandom walks as pm.CustomDist, n = {n} records, {draws} draws timed")
    print(f"{'case':<36}{'route':<20}{'us/record-draw':>15}{'ratio':>8}{'max |diff|':>12}")
    for label, route, cost, values in rows:
        diff = np.abs(values - rows[0][3]).max() if "Gaussian" in label else float("nan")
        print(f"{label:<36}{route:<20}{1e6 * cost:>15.1f}{cost / base:>8.1f}{diff:>12.1e}")


def main(argv=None) -> None:
    import xarray as xr

    from pymc_edp.model.pymc import elementwise_loglik

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="records (default 1000)")
    parser.add_argument("--draws", type=int, default=20, help="draws timed (default 20)")
    parser.add_argument("--walk-n", type=int, default=100, help="walk records (default 100)")
    args = parser.parse_args(argv)
    print(_stack())
    routes(args.walk_n, args.draws)
    rng = np.random.default_rng(20261125)
    x = np.sort(rng.uniform(0, 30, args.n))
    y = np.sin(x) + rng.normal(0, 0.3, args.n)
    draws = args.draws
    post = {
        "mu": rng.normal(0, 0.1, (1, draws)),
        "ls": rng.uniform(0.8, 1.2, (1, draws)),
        "eta": rng.uniform(0.8, 1.2, (1, draws)),
    }
    rows = []
    for fixed in (False, True):
        model = _model(x, y, fixed)
        names = ["mu"] if fixed else ["mu", "ls", "eta"]
        posterior = xr.Dataset({k: (("chain", "draw"), post[k]) for k in names})
        t0 = time.perf_counter()
        fn = elementwise_loglik(model, "y")
        fn(posterior.isel(draw=[0]), y)
        compile_s = time.perf_counter() - t0
        t0 = time.perf_counter()
        got = fn(posterior, y)
        per_draw = (time.perf_counter() - t0) / draws
        t0 = time.perf_counter()
        ref = np.stack(
            [
                _direct(
                    x,
                    y,
                    post["mu"][0, s],
                    1.0 if fixed else post["ls"][0, s],
                    1.0 if fixed else post["eta"][0, s],
                )
                for s in range(draws)
            ]
        )
        base = (time.perf_counter() - t0) / draws
        err = float(np.abs(got - ref).max())
        label = "hyperparameters fixed" if fixed else "hyperparameters estimated"
        rows.append((label, compile_s, per_draw, base, err))
    print(f"\nGP marginal likelihood, n = {args.n} records, {draws} draws timed")
    print(f"{'case':<28}{'compile s':>10}{'s/draw':>10}{'SciPy s/draw':>14}{'ratio':>7}", end="")
    print(f"{'4,000 draws':>13}{'max |diff|':>12}")
    for label, compile_s, per_draw, base, err in rows:
        print(
            f"{label:<28}{compile_s:>10.2f}{per_draw:>10.4f}{base:>14.4f}"
            f"{per_draw / base:>7.2f}{4000 * per_draw:>12.0f}s{err:>12.1e}"
        )


if __name__ == "__main__":
    main()
