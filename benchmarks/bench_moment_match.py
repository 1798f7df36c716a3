"""Moment matching vs nutpie refits for the bad-k-hat neighbours (issue 14).

Data: statsmodels' bundled ``star98`` (California school districts, offline), every 6th of
the 303 districts (n = 51): a binomial logistic regression of the number of pupils above the
national median (``NABOVE`` of ``NABOVE + NBELOW``) on four standardised covariates
(``LOWINC``, ``PERASIAN``, ``PERBLACK``, ``PERHISP``), priors N(0, 2.5^2). The large counts
make the districts with outlying covariate patterns very influential: six have a plain PSIS
k-hat above 0.7 with 4 x 1,000 nutpie draws.

Measured in the same run:

* time per moment-matched neighbour (``moment_match_neighbours`` on all bad neighbours, the
  model compiled once, median of ``--repeats`` runs; the one-time compilation is reported
  separately) against the time per refit of
  ``edp.audit(method="refit")`` on all 51 neighbours (nutpie, 2 x 1,000 draws + 1,000 tuning,
  compiled once): target ratio <= 0.1;
* the number of refits ``method="auto"`` needs without moment matching (k-hat above the
  threshold) and with it (still above after moment matching);
* the epsilon of the bad neighbours by plain PSIS and by moment matching against the
  all-refit audit (B = 20, smoothing 0.01).

With ``--audit`` it also runs the audit front door once ``method="moment_match"`` is wired in
(:func:`audit_figures`).

Run: python benchmarks/bench_moment_match.py [--draws 1000] [--repeats 5] [--audit]
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np

BINS = 20
NAMES = ["alpha", "beta"]


def make_data(step: int = 6):
    """Every ``step``-th district of statsmodels' star98: covariates, trials, successes."""
    import statsmodels.api as sm

    df = sm.datasets.star98.load_pandas().data
    x = df[["LOWINC", "PERASIAN", "PERBLACK", "PERHISP"]].to_numpy(float)
    x = (x - x.mean(0)) / x.std(0)
    above = df["NABOVE"].to_numpy(int)
    trials = (df["NABOVE"] + df["NBELOW"]).to_numpy(int)
    idx = np.arange(0, len(df), step)
    return x[idx], trials[idx], above[idx]


def build(x, trials, above):
    import pymc as pm

    with pm.Model() as model:
        alpha = pm.Normal("alpha", 0.0, 2.5)
        beta = pm.Normal("beta", 0.0, 2.5, shape=x.shape[1])
        pm.Binomial("y", n=trials, logit_p=alpha + x @ beta, observed=above)
    return model


def fit(model, draws: int, seed: int = 1):
    import pymc as pm

    with model:
        idata = pm.sample(
            draws,
            tune=1000,
            chains=4,
            nuts_sampler="nutpie",
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    return idata


def audit_figures(idata, model, refit_opts) -> dict:
    """The audit-level figures, once ``method="moment_match"`` is wired into ``edp.audit``."""
    import pymc_edp as edp

    kw = dict(var_names=NAMES, bins=BINS, random_seed=1, progressbar=False)
    out = {}
    for method in ("psis", "moment_match", "auto", "refit"):
        t0 = time.perf_counter()
        res = edp.audit(idata, model, method=method, refit=refit_opts, **kw)
        out[method] = (res, time.perf_counter() - t0)
    res_auto = out["auto"][0]
    kinds, counts = np.unique(np.asarray(res_auto.pointwise["method"].values), return_counts=True)
    print(f"audit: per-neighbour methods under auto: {dict(zip(kinds, counts, strict=True))}")
    k_mm = np.asarray(res_auto.pointwise["pareto_k_moment_match"].values)
    print(f"  k-hat after moment matching where attempted: {np.round(k_mm[np.isfinite(k_mm)], 3)}")
    for method, (res, secs) in out.items():
        print(f"  {method:>12}: epsilon {res.epsilon:.4f}  ({secs:.1f} s)")
    return out


def main(argv=None) -> None:
    from stack import stack_versions

    import pymc_edp as edp
    from pymc_edp.base.binning import quantile_bins
    from pymc_edp.base.psis import khat_threshold
    from pymc_edp.core.loglik import posterior_matrix, relative_efficiency
    from pymc_edp.model.compat import get_group
    from pymc_edp.model.moment_match import ModelDensity, moment_match_neighbours

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--draws", type=int, default=1000, help="draws per chain (4 chains)")
    parser.add_argument(
        "--repeats", type=int, default=5, help="timed runs of the moment matching (median)"
    )
    parser.add_argument("--audit", action="store_true", help="also run audit_figures")
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    print("stack:", stack_versions())

    x, trials, above = make_data()
    model = build(x, trials, above)
    idata = fit(model, args.draws)
    post = get_group(idata, "posterior")
    n_samples = post.sizes["chain"] * post.sizes["draw"]
    threshold = khat_threshold(n_samples)
    reff = relative_efficiency(post)

    psis = edp.audit(idata, model, var_names=NAMES, bins=BINS, method="psis", progressbar=False)
    k_psis = np.asarray(psis.pointwise["pareto_k"].values)
    eps_psis = np.asarray(psis.pointwise["epsilon"].values)
    bad = np.flatnonzero(k_psis > threshold)
    print(f"n = {len(above)}, S = {n_samples}, threshold {threshold:.3f}, reff {reff:.3f}")
    print(f"plain PSIS k-hat > threshold: {len(bad)} neighbours {list(bad)}")
    print(f"  their k-hats: {np.round(k_psis[bad], 2)}")

    draws = posterior_matrix(post, NAMES)[0]
    bins = quantile_bins(draws, BINS)
    t0 = time.perf_counter()
    density = ModelDensity(model, NAMES)
    t_compile = time.perf_counter() - t0

    def changes(k):
        return {"y": (np.array([k]), None)}

    common = dict(names=NAMES, bins=bins, smoothing=0.01, reff=reff, density=density)
    moment_match_neighbours(model, idata, bad[:1], changes, **common)  # warm-up
    runs = []
    for _ in range(max(args.repeats, 1)):
        t0 = time.perf_counter()
        mm = moment_match_neighbours(model, idata, bad, changes, **common)
        runs.append((time.perf_counter() - t0) / max(len(bad), 1))
    t_mm = float(np.median(runs))
    still_bad = [k for k in bad if not mm[k].converged]

    refit_opts = edp.RefitOptions(draws=1000, tune=1000, chains=2, engine="nutpie")
    t0 = time.perf_counter()
    refit = edp.audit(
        idata, model, var_names=NAMES, bins=BINS, method="refit", refit=refit_opts,
        random_seed=1, progressbar=False,
    )  # fmt: skip
    t_refit = (time.perf_counter() - t0) / len(above)
    eps_refit = np.asarray(refit.pointwise["epsilon"].values)

    print(f"compile (once per audit): {t_compile:.2f} s")
    print(
        f"time per moment-matched neighbour {t_mm:.3f} s vs per nutpie refit {t_refit:.3f} s "
        f"(all {len(above)} refits, compilation amortised): ratio {t_mm / t_refit:.3f} "
        f"(target <= 0.1); moment matching runs {np.round(runs, 3)}"
    )
    print(
        f"refits needed by auto: without moment matching {len(bad)}, with it "
        f"{len(still_bad)} {still_bad}"
    )
    print("neighbour  k_psis  k_mm  iters  eps_psis  eps_mm  mcse_mm  eps_refit")
    eps_mm = eps_psis.copy()
    for k in bad:
        o = mm[k]
        eps_mm[k] = o.eps.max()
        print(
            f"{k:9d}  {k_psis[k]:6.2f}  {o.khat_after:4.2f}  {o.iterations:5d}  "
            f"{eps_psis[k]:8.4f}  {o.eps.max():6.4f}  {o.mcse:7.4f}  {eps_refit[k]:9.4f}"
        )
    print(
        f"audit epsilon: psis {eps_psis.max():.4f}, psis + moment matching "
        f"{eps_mm.max():.4f}, all-refit {eps_refit.max():.4f}"
    )
    err_psis = np.abs(eps_psis[bad] - eps_refit[bad])
    err_mm = np.abs(eps_mm[bad] - eps_refit[bad])
    print(
        f"bad neighbours, mean |eps - eps_refit|: psis {err_psis.mean():.4f}, "
        f"moment matching {err_mm.mean():.4f}"
    )
    if args.audit:
        audit_figures(idata, model, refit_opts)


if __name__ == "__main__":
    main()
