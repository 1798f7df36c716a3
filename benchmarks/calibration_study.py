"""Charest & Han's Tables 3-4, for their refit estimator and for pymc_edp's reweighting.

Design (Charest & Han 2017, sec. 4): relative bias of the B-EDP epsilon estimate and Abowd's
empirical measure of imprecision (EMI), averaged over replications, for M posterior draws and
B bins, on

* Beta-Binomial, n = 5, alpha = beta = 0.5, x = 0, neighbour "replace" (the relation that
  reproduces their Table 2: see DESIGN.md), exact value from
  ``pymc_edp.conjugate.beta_binomial_edp``;
* Normal-Normal, n = 100 records drawn once (seed 2017) from N(10, 5), sigma^2 = 5 known,
  prior N(10, 3), neighbour "remove", exact value from ``normal_normal_edp``.

Estimators, per replication:

* **refit** (Charest & Han's procedure, sec. 2 steps 1-4): M draws from p(theta | D) cut into
  B equal-count bins; for every neighbour (5 resp. 100) M *independent* draws from its exact
  posterior, counted in those bins; additive smoothing alpha = 0.01. The counts of M
  independent draws in fixed bins are multinomial with the neighbour's exact bin
  probabilities, so they are drawn as such (same distribution, much faster). EMI: the same
  with D in place of every neighbour (n independent sets of M draws from p(theta | D)).
* **ours**: the same M full-data draws, with their exact pointwise log-likelihood in an
  ``InferenceData``, through ``pymc_edp.audit(method="psis")`` (Pareto-smoothed
  reweighting), then ``EDPResult.curve`` for all B from the stored weights. Reported with
  smoothing 0 (the reweighting never leaves a bin empty) and with the audit's default 0.01;
  our EMI is ``EDPResult.emi()`` (split-half, M/2 draws per half); at M = 10,000 also the mean
  Monte-Carlo standard error and the coverage of the nominal 90% interval.

Usage::

    python benchmarks/calibration_study.py                     # 100 replications (~15 min)
    python benchmarks/calibration_study.py --reps 10 --M 10000  # quick look
    python benchmarks/calibration_study.py --figures docs/figures   # the docs' diag_*.png
"""

from __future__ import annotations

import argparse
import time
import warnings

import numpy as np
from scipy import special, stats

from pymc_edp.diagnostics import emi as _emi
from pymc_edp.diagnostics import epsilon_curve

BINS = (5, 10, 20, 50, 100, 250)
ALPHA = 0.01


# ----------------------------------------------------------------------------- models
class BetaBinomial:
    name = "Beta-Binomial (n=5, a=b=0.5, x=0, replace)"
    short = "bb"

    def __init__(self):
        import pymc as pm

        from pymc_edp.conjugate import beta_binomial_edp

        self.n, self.x, self.a, self.b = 5, 0, 0.5, 0.5
        self.y = np.zeros(self.n)
        self.exact = beta_binomial_edp(self.n, self.x, self.a, self.b, list(BINS))
        self.full = (self.a + self.x, self.b + self.n - self.x)
        # every record is a 0; replacing any of them by a 1 gives x = 1
        self.neigh = [(self.a + 1, self.b + self.n - 1)] * self.n
        with pm.Model() as self.model:
            p = pm.Beta("p", self.a, self.b)
            pm.Bernoulli("y", p, observed=self.y)

    def draw(self, rng, m):
        return rng.beta(*self.full, size=m)

    def cdf_full(self, q):
        return special.betainc(*self.full, q)

    def cdf_neigh(self, q):
        return np.stack([special.betainc(a, b, q) for a, b in self.neigh])

    def audit(self, theta, smoothing):
        import pymc_edp as edp
        from pymc_edp.model.compat import from_dict

        ll = stats.bernoulli.logpmf(self.y[None, None, :], theta[None, :, None])
        idata = from_dict(
            {
                "posterior": {"p": theta[None]},
                "log_likelihood": {"y": ll},
                "observed_data": {"y": self.y},
            }
        )
        return edp.audit(
            idata,
            self.model,
            var_names="p",
            bins=20,
            method="psis",
            neighbour="replace",
            smoothing=smoothing,
            progressbar=False,
        )


class NormalNormal:
    name = "Normal-Normal (n=100, sigma^2=5, prior N(10, 3), remove)"
    short = "nn"

    def __init__(self):
        from pymc_edp.conjugate import normal_normal_edp, normal_normal_posterior

        self.sigma, self.mu0, self.sigma0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)
        self.y = np.random.default_rng(2017).normal(10.0, self.sigma, 100)
        self.exact = normal_normal_edp(self.y, self.sigma, self.mu0, self.sigma0, list(BINS))
        self.full = normal_normal_posterior(self.y, self.sigma, self.mu0, self.sigma0)
        self.neigh = [
            normal_normal_posterior(np.delete(self.y, i), self.sigma, self.mu0, self.sigma0)
            for i in range(self.y.size)
        ]

    def draw(self, rng, m):
        return rng.normal(self.full[0], self.full[1], size=m)

    def cdf_full(self, q):
        return special.ndtr((q - self.full[0]) / self.full[1])

    def cdf_neigh(self, q):
        return np.stack([special.ndtr((q - m) / s) for m, s in self.neigh])

    def audit(self, theta, smoothing):
        import pymc_edp as edp
        from pymc_edp.model.compat import from_dict

        ll = stats.norm.logpdf(self.y[None, None, :], theta[None, :, None], self.sigma)
        idata = from_dict({"posterior": {"mu": theta[None]}, "log_likelihood": {"y": ll}})
        return edp.audit(
            idata, var_names="mu", bins=20, method="psis", smoothing=smoothing, progressbar=False
        )


# ------------------------------------------------------------------------- estimators
def refit_estimate(model, theta, n_bins, rng, alpha=ALPHA):
    """Charest & Han's estimator and Abowd's EMI for one set of full-data draws."""
    from pymc_edp.base.binning import quantile_bins

    m = theta.size
    bins = quantile_bins(theta[None], n_bins)
    nb = int(bins.n_bins[0])
    cut = bins.edges[0, : nb - 1]
    full = bins.counts[0, :nb].astype(float)
    log_full = np.log(full + alpha) - np.log(m + nb * alpha)

    def eps_of(cdf):
        c = np.concatenate([np.zeros((cdf.shape[0], 1)), cdf, np.ones((cdf.shape[0], 1))], 1)
        prob = np.clip(np.diff(c, axis=1), 0, None)
        prob /= prob.sum(axis=1, keepdims=True)
        counts = np.stack([rng.multinomial(m, p) for p in prob])
        log_nb = np.log(counts + alpha) - np.log(m + nb * alpha)
        return float(np.abs(log_nb - log_full).max())

    n_nb = len(model.neigh)
    eps = eps_of(model.cdf_neigh(cut))
    emi = eps_of(np.repeat(model.cdf_full(cut)[None], n_nb, axis=0))
    return eps, emi


def run(model, m, reps, seed, intervals):
    """All replications for one model and M; returns a dict of arrays over (rep, B)."""
    out = {
        k: np.full((reps, len(BINS)), np.nan)
        for k in ("refit", "refit_emi", "ours0", "ours01", "ours_emi", "mcse", "cover")
    }
    for r in range(reps):
        rng = np.random.default_rng([seed, m, r])
        theta = model.draw(rng, m)
        for g, b in enumerate(BINS):
            out["refit"][r, g], out["refit_emi"][r, g] = refit_estimate(model, theta, b, rng)
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # k-hat / sparse-bin notices are in the table
            res = model.audit(theta, smoothing=0.0)
            curve = res.curve(bins=list(BINS), prob=0.9 if intervals else None)
            curve01 = epsilon_curve(res, list(BINS), prob=None, smoothing=ALPHA)
            out["ours_emi"][r] = [float(_emi(res, bins=b, warn=False)["emi"]) for b in BINS]
        out["ours0"][r] = curve.values
        out["ours01"][r] = curve01.values
        if intervals:
            out["mcse"][r] = curve["mcse"].values
            out["cover"][r] = (curve["lower"].values <= model.exact) & (
                model.exact <= curve["upper"].values
            )
    return out


def table(model, m, out) -> str:
    ex = model.exact
    reps = out["refit"].shape[0]

    def rb(k):
        return 100 * (out[k].mean(axis=0) / ex - 1)

    rb_refit, rb0, rb01 = rb("refit"), rb("ours0"), rb("ours01")
    se_rb0 = 100 * out["ours0"].std(axis=0, ddof=1) / np.sqrt(reps) / ex
    lines = [
        f"**{model.name}, M = {m:,}** ({reps} replications)",
        "",
        "| B | exact | RB refit (%) | EMI refit | RB ours (%) | RB ours, alpha=0.01 (%) "
        "| EMI ours (M/2) | sd ours | mean MCSE ours | 90% coverage ours | abs-RB ratio |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for g, b in enumerate(BINS):
        cover = out["cover"][:, g]
        cov = f"{100 * np.nanmean(cover):.0f}%" if np.isfinite(cover).any() else "-"
        mc = out["mcse"][:, g]
        mcs = f"{np.nanmean(mc):.3f}" if np.isfinite(mc).any() else "-"
        ratio = abs(rb_refit[g]) / max(abs(rb0[g]), 1e-12)
        lines.append(
            f"| {b} | {ex[g]:.3f} | {rb_refit[g]:+.2f} | {out['refit_emi'][:, g].mean():.3f} "
            f"| {rb0[g]:+.2f} ± {se_rb0[g]:.2f} | {rb01[g]:+.2f} "
            f"| {out['ours_emi'][:, g].mean():.3f} | {out['ours0'][:, g].std(ddof=1):.3f} "
            f"| {mcs} | {cov} | {ratio:.0f}x |"
        )
    return "\n".join(lines)


# ---------------------------------------------------------------------------- figures
def figures(folder: str) -> None:
    """The docs' figures: the Table 2 setting (M = 10,000) and the Normal-Normal model."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from pymc_edp import plots

    bb, nn = BetaBinomial(), NormalNormal()
    rng = np.random.default_rng(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        res_bb = bb.audit(bb.draw(rng, 10_000), smoothing=0.0)
        res_nn = nn.audit(nn.draw(rng, 10_000), smoothing=0.01)
    made = []

    def save(ax, name):
        path = f"{folder}/diag_{name}.png"
        ax.figure.savefig(path, dpi=110)
        plt.close(ax.figure)
        made.append(path)

    ax = plots.plot_epsilon_curve(res_bb, exact=dict(zip(BINS, bb.exact, strict=True)))
    save(ax, "curve_beta_binomial")
    ax = plots.plot_epsilon_curve(res_nn, exact=dict(zip(BINS, nn.exact, strict=True)))
    save(ax, "curve_normal")
    save(plots.plot_epsilon_intervals(res_nn), "intervals")
    save(plots.plot_bin_log_ratios(res_nn), "bin_log_ratios")
    save(plots.plot_neighbour_posterior(res_nn), "overlay")
    save(plots.plot_delta_profile(res_nn), "delta_profile")
    for p in made:
        print("wrote", p)


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--reps", type=int, default=100)
    parser.add_argument("--M", type=int, nargs="+", default=[10_000, 100_000])
    parser.add_argument("--models", nargs="+", default=["bb", "nn"])
    parser.add_argument("--seed", type=int, default=20170)
    parser.add_argument("--figures", metavar="FOLDER", help="only write the docs' figures")
    args = parser.parse_args(argv)
    if args.figures:
        figures(args.figures)
        return
    models = {"bb": BetaBinomial, "nn": NormalNormal}
    for key in args.models:
        model = models[key]()
        for m in args.M:
            t0 = time.perf_counter()
            out = run(model, m, args.reps, args.seed, intervals=m <= 10_000)
            print(table(model, m, out))
            print(f"\n({time.perf_counter() - t0:.0f} s)\n", flush=True)


if __name__ == "__main__":
    main()
