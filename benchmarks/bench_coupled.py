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

Usage::

    python benchmarks/bench_coupled.py              # n = 1,000, 20 draws timed (~2 minutes)
    python benchmarks/bench_coupled.py --n 300
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


def main(argv=None) -> None:
    import xarray as xr

    from pymc_edp.model.pymc import elementwise_loglik

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--n", type=int, default=1000, help="records (default 1000)")
    parser.add_argument("--draws", type=int, default=20, help="draws timed (default 20)")
    args = parser.parse_args(argv)
    print(_stack())
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
