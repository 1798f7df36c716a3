"""Worked example of docs/query.md: Grunfeld's investment panel (statsmodels).

Each year is a database, each of the 11 firms an individual; the released statistic is the
annual growth of the firms' total investment, ``log(sum invest_t / sum invest_{t-1})``.

Run from the repository root:

    python tests/reference/query_grunfeld_example.py            # numbers only
    python tests/reference/query_grunfeld_example.py --figures  # also docs/figures/query_*.png

The numbers it prints are the ones quoted in docs/query.md and checked by
tests/query/test_init.py::test_grunfeld_worked_example.
"""

import json
import sys
from pathlib import Path

import numpy as np
import pandas as pd

import pymc_edp.query as edpq
from pymc_edp import plots as edp_plots

EPSILON_NOISE = 0.25


def grunfeld_panel() -> pd.DataFrame:
    """Firm-year rows with this year's and last year's investment (1936-1954)."""
    from statsmodels.datasets import grunfeld

    g = grunfeld.load_pandas().data
    g["year"] = g["year"].astype(int)
    g["firm"] = g["firm"].astype(str)
    g = g.sort_values(["firm", "year"])
    g["invest_prev"] = g.groupby("firm")["invest"].shift()
    return g.dropna(subset=["invest_prev"])[["year", "firm", "invest", "invest_prev"]]


def investment_growth(df: pd.DataFrame) -> float:
    """Growth of total investment over the previous year (log ratio)."""
    return float(np.log(df["invest"].sum() / df["invest_prev"].sum()))


def gm_growth(df: pd.DataFrame) -> float:
    """Side information: General Motors knows its own investment growth."""
    row = df[df["firm"] == "General Motors"]
    return float(np.log(row["invest"].sum() / row["invest_prev"].sum()))


def run(figures: bool = False, outdir: Path | None = None) -> dict:
    panel = grunfeld_panel()
    res = edpq.query_edp(
        panel, investment_growth, id_col="firm", database_col="year", progressbar=False
    )
    noise = edpq.noise_kernel(res, EPSILON_NOISE)
    noise_laplace = edpq.noise_kernel(res, EPSILON_NOISE, kernel="laplace")
    check = edpq.check_noise(
        res, noise, n_noise=200, random_seed=1, epsilons=[EPSILON_NOISE], progressbar=False
    )
    side = edpq.query_edp(
        panel,
        investment_growth,
        id_col="firm",
        database_col="year",
        side_info=gm_growth,
        progressbar=False,
        profile=dict(side_info_buckets=2),
    )

    def at(ds, name, eps):
        return float(ds[name].sel(epsilon=eps, method="nearest"))

    numbers = {
        "n_databases": int(res.sizes["database"]),
        "n_individuals": int(res.sizes["individual"]),
        "independence_pvalue": dict(
            zip(
                res["test"].to_numpy().tolist(),
                res["independence_pvalue"].round(3).values.tolist(),
                strict=True,
            )
        ),
        "density": {
            k: res.attrs[f"density_{k}"] for k in ("method", "kernel", "bandwidth", "adaptivity")
        },
        "delta_at_0": at(res, "delta", 0.0),
        "delta_at_0.1": at(res, "delta", 0.1),
        "delta_star_at_0.1": at(res, "delta_star", 0.1),
        "n_exposed_at_0.1": int(res["n_exposed"].sel(epsilon=0.1, method="nearest")),
        "epsilon_delta_0.01": float(res["epsilon_delta"].sel(target=0.01)),
        "epsilon_delta_star_0.01": float(res["epsilon_delta_star"].sel(target=0.01)),
        "epsilon_delta_0.001": float(res["epsilon_delta"].sel(target=0.001)),
        "top_individuals": res["top_individual"].to_numpy().tolist(),
        "noise_scale": noise.scale,
        "noise_scale_hausdorff": float(res["hausdorff"].max()) / EPSILON_NOISE,
        "noise_mean_abs": noise.mean_abs,
        "noise_kernel": noise.kernel,
        "noise_bandwidth": noise.bandwidth,
        "noise_negative_mass": noise.negative_mass,
        "noise_grid_spacing": noise.dx,
        "noise_laplace_kernel_bandwidth": noise_laplace.bandwidth,
        "noise_laplace_kernel_mean_abs": noise_laplace.mean_abs,
        "noised_delta_at_eps": float(check["delta"].item()),
        "query_sd": float(res["value"].std()),
        "side_delta_at_0.1": at(side, "delta", 0.1),
        "side_databases_per_bucket": side["n_databases"].to_numpy().tolist(),
    }
    if figures:
        import matplotlib.pyplot as plt

        outdir = outdir or Path(__file__).resolve().parents[2] / "docs" / "figures"
        outdir.mkdir(parents=True, exist_ok=True)
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), layout="constrained")
        edp_plots.plot_delta(res, kind="delta", target=0.01, ax=axes[0], title="Figure 3: delta")
        edp_plots.plot_delta(
            res,
            kind="delta_star",
            target=0.01,
            ax=axes[1],
            title="Figure 4: total risk",
            plot_kwargs={"color": "C1"},
        )
        fig.savefig(outdir / "query_delta.png", dpi=110)
        ax = edp_plots.plot_delta_i(res, top=5, title="delta_i of the five most exposed firms")
        ax.figure.savefig(outdir / "query_delta_i.png", dpi=110)
        ax = edp_plots.plot_densities(
            res, title="Figure 5: with and without the most exposed firm"
        )
        ax.set_xlabel("growth of total investment (log ratio)")
        ax.figure.savefig(outdir / "query_densities.png", dpi=110)
        ax = edp_plots.plot_noise_kernel(
            noise, title=f"Noise for eps = {EPSILON_NOISE} (Figure 1)", random_seed=0
        )
        ax.figure.savefig(outdir / "query_noise.png", dpi=110)
        plt.close("all")
    return numbers


if __name__ == "__main__":
    out = run(figures="--figures" in sys.argv)
    print(json.dumps(out, indent=2, default=float))
