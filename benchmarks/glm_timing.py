"""Cost per record-draw of the streamed log-likelihood: PyTensor's graph vs the fast kernels.

Models: GLM regressions with five coefficients (an intercept and four standard-normal
covariates, ``pm.Data`` ``X`` with dims ``(obs, coef)``), observed data simulated from the
model with a fixed seed; families ``normal`` (unknown sigma), ``logistic`` (Bernoulli,
``logit_p=``), ``probit`` (Bernoulli, ``p=invprobit``), ``poisson`` (``mu=exp(eta)``) and
``negbin`` (``NegativeBinomial(mu=exp(eta), alpha)``, alpha free). Posterior: 4 chains of
i.i.d. Gaussian draws around the true values (sd 0.01), no MCMC: the cost does not depend
on how the draws were made.

For each family, with ``model_log_likelihood(..., fast=False)`` (PyTensor's compiled
``logp`` only) and ``fast=True`` (the kernels of :mod:`pymc_edp.model.families`), in one
run: ``range_of`` (the audit's bound pass, removal), ``range_of`` for a replacement
(``with_observed``) and the columns themselves (``columns[:, lo:hi]``), over all records
in chunks of ``--chunk`` records, best of ``--repeat`` after a warm-up. ns per record-draw
= wall time / (n x S). The last column is each family's fast ``range_of`` over the Normal
regression's fast ``range_of`` (target: <= 2).

Usage::

    python benchmarks/glm_timing.py                         # n = 20,000 x 4,000 draws
    python benchmarks/glm_timing.py --n 100000 --repeat 1   # the full size, ~3 minutes
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

FAMILIES = ("normal", "logistic", "probit", "poisson", "negbin")
#: True coefficients (intercept first) per family: moderate means and probabilities.
_BETA = {
    "normal": np.array([1.0, 0.5, -0.3, 0.2, 0.1]),
    "logistic": np.array([0.2, 0.8, -0.5, 0.3, -0.2]),
    "probit": np.array([0.1, 0.5, -0.3, 0.2, -0.1]),
    "poisson": np.array([0.7, 0.3, -0.2, 0.1, 0.05]),
    "negbin": np.array([0.7, 0.3, -0.2, 0.1, 0.05]),
}


def build(family: str, n: int, n_draws: int, seed: int = 0):
    """``(model, idata)``: a GLM regression of ``n`` simulated records and its posterior.

    Parameters
    ----------
    family : {"normal", "logistic", "probit", "poisson", "negbin"}
    n : int
        Records.
    n_draws : int
        Posterior draws in all (4 chains of ``n_draws // 4``).
    seed : int

    Returns
    -------
    model : pymc.Model
        Coefficients ``beta`` (dims ``coef``), plus ``sigma`` (normal) or ``alpha``
        (negbin); observed ``y`` (dims ``obs``).
    idata
        With a posterior of i.i.d. Gaussian draws around the true values (sd 0.01).
    """
    import pymc as pm

    from pymc_edp.model.compat import from_dict

    if family not in FAMILIES:
        raise ValueError(f"family must be one of {FAMILIES}, got {family!r}")
    rng = np.random.default_rng(seed)
    X = np.column_stack([np.ones(n), rng.standard_normal((n, 4))])
    beta = _BETA[family]
    eta = X @ beta
    sigma, alpha = 1.0, 5.0
    if family == "normal":
        y = eta + sigma * rng.standard_normal(n)
    elif family == "logistic":
        y = rng.binomial(1, 1.0 / (1.0 + np.exp(-eta)))
    elif family == "probit":
        from scipy.special import ndtr

        y = rng.binomial(1, ndtr(eta))
    elif family == "poisson":
        y = rng.poisson(np.exp(eta))
    else:
        mu = np.exp(eta)
        y = rng.negative_binomial(alpha, alpha / (alpha + mu))
    coords = {"obs": np.arange(n), "coef": ["intercept", "x1", "x2", "x3", "x4"]}
    with pm.Model(coords=coords) as model:
        Xd = pm.Data("X", X, dims=("obs", "coef"))
        b = pm.Normal("beta", 0.0, 10.0, dims="coef")
        lin = pm.math.dot(Xd, b)
        if family == "normal":
            s = pm.HalfNormal("sigma", 10.0)
            pm.Normal("y", lin, s, observed=y, dims="obs")
        elif family == "logistic":
            pm.Bernoulli("y", logit_p=lin, observed=y, dims="obs")
        elif family == "probit":
            pm.Bernoulli("y", p=pm.math.invprobit(lin), observed=y, dims="obs")
        elif family == "poisson":
            pm.Poisson("y", mu=pm.math.exp(lin), observed=y, dims="obs")
        else:
            a = pm.Gamma("alpha", 2.0, 0.5)
            pm.NegativeBinomial("y", mu=pm.math.exp(lin), alpha=a, observed=y, dims="obs")
    chains = 4
    per_chain = max(1, n_draws // chains)
    post = {"beta": beta + 0.01 * rng.standard_normal((chains, per_chain, 5))}
    if family == "normal":
        post["sigma"] = np.abs(sigma + 0.01 * rng.standard_normal((chains, per_chain)))
    if family == "negbin":
        post["alpha"] = np.abs(alpha + 0.01 * rng.standard_normal((chains, per_chain)))
    idata = from_dict(
        {"posterior": post},
        coords={"coef": coords["coef"]},
        dims={"beta": ["coef"]},
    )
    return model, idata


def _best(fn, repeat: int) -> float:
    fn()  # warm-up: compilation, numba, caches
    best = np.inf
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def time_family(family: str, n: int, n_draws: int, chunk: int, repeat: int, seed: int = 0):
    """``{(mode, what): ns per record-draw}`` and the largest |fast - PyTensor| column gap."""
    from pymc_edp.model.stream import model_log_likelihood

    model, idata = build(family, n, n_draws, seed)
    cols = {
        mode: model_log_likelihood(model, idata, fast=(mode == "fast")).arrays[0]
        for mode in ("pytensor", "fast")
    }
    if cols["fast"]._fast is None:
        raise RuntimeError(f"{family}: the fast path was not used")
    size = cols["fast"].shape[0] * cols["fast"].shape[1]
    alt_y = np.asarray(cols["fast"]._data[0])[::-1].copy()  # some other observed values
    out = {}
    blocks = [slice(lo, min(n, lo + chunk)) for lo in range(0, n, chunk)]
    for mode, c in cols.items():
        other = c.with_observed(alt_y)

        def ranges(c=c):
            for b in blocks:
                c.range_of(b)

        def replacements(c=c, other=other):
            for b in blocks:
                c.range_of(b, other)

        def columns(c=c):
            for b in blocks:
                c[:, b]

        for what, fn in (("range", ranges), ("replace", replacements), ("columns", columns)):
            out[(mode, what)] = _best(fn, repeat) / size * 1e9
    fast = cols["fast"]._fast
    theta = list(cols["fast"]._draws)

    def params():
        for b in blocks:
            chunk_data = [a[b] for a in cols["fast"]._data]
            k = b.stop - b.start
            for block in fast._blocks(len(theta[0]), k):
                fast._params([t[block] for t in theta], chunk_data, k)

    out[("fast", "params")] = _best(params, repeat) / size * 1e9
    probe = slice(0, min(n, chunk))
    a, b = cols["fast"][:, probe], cols["pytensor"][:, probe]
    gap = float(np.max(np.abs(a - b) / (1e-12 + 1e-12 * np.abs(b))))
    return out, gap


def main(argv=None) -> None:
    """Print the timing table."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=20_000, help="records (default 20,000)")
    parser.add_argument("--draws", type=int, default=4_000, help="draws (default 4,000)")
    parser.add_argument("--chunk", type=int, default=2_000, help="records per call")
    parser.add_argument("--repeat", type=int, default=2, help="timed calls (best of)")
    parser.add_argument("--families", nargs="*", default=list(FAMILIES))
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    import pymc
    import pytensor

    print(f"pymc {pymc.__version__}, pytensor {pytensor.__version__}, numpy {np.__version__}")
    print(f"{args.n} records x {args.draws} draws, chunks of {args.chunk} records")
    print(
        f"ns per record-draw (best of {args.repeat}); gap = max |fast - PyTensor| / "
        "(1e-12 (1 + |x|)); params = the fast path's parameter function alone"
    )
    header = (
        f"{'family':9s} {'range pt':>9s} {'range fast':>10s} {'repl pt':>8s} "
        f"{'repl fast':>9s} {'cols pt':>8s} {'cols fast':>9s} {'params':>7s} {'gap':>6s} "
        f"{'range/normal':>12s}"
    )
    print(header)
    rows = {}
    for family in args.families:
        rows[family] = time_family(family, args.n, args.draws, args.chunk, args.repeat)
    ref = rows["normal"][0][("fast", "range")] if "normal" in rows else np.nan
    for family, (t, gap) in rows.items():
        print(
            f"{family:9s} {t['pytensor', 'range']:9.2f} {t['fast', 'range']:10.2f} "
            f"{t['pytensor', 'replace']:8.2f} {t['fast', 'replace']:9.2f} "
            f"{t['pytensor', 'columns']:8.2f} {t['fast', 'columns']:9.2f} "
            f"{t['fast', 'params']:7.2f} {gap:6.2f} "
            f"{t['fast', 'range'] / ref:12.2f}"
        )


if __name__ == "__main__":
    main()
