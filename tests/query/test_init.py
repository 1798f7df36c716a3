"""Tests of pymc_edp.query (``__init__``): the front door ``query_edp`` and the namespace."""

import importlib
import sys
from pathlib import Path

import numpy as np
import pytest
import xarray as xr

import pymc_edp.query as edpq

sys.path.insert(0, str(Path(__file__).parents[1] / "reference"))

MODULES = [
    "pymc_edp.base.query_kernels",
    "pymc_edp.query.density",
    "pymc_edp.query.independence",
    "pymc_edp.query.noise",
    "pymc_edp.query.profile",
    "pymc_edp.query.queries",
    "pymc_edp.query.samples",
]


def test_namespace_names_come_from_the_modules():
    homes = {}
    for module in MODULES:
        mod = importlib.import_module(module)
        for name in getattr(mod, "__all__", []):
            homes.setdefault(name, getattr(mod, name))
    for name in edpq.__all__:
        assert hasattr(edpq, name), name
        if name != "query_edp":
            assert getattr(edpq, name) is homes[name], name


def test_query_edp_result(audit):
    res = audit
    eps = res["epsilon"].to_numpy()
    delta, star, di = (res[k].to_numpy() for k in ("delta", "delta_star", "delta_i"))
    assert np.all(np.diff(delta) <= 1e-12) and np.all(np.diff(star) <= 1e-12)
    np.testing.assert_allclose(delta, di.max(axis=0))
    np.testing.assert_allclose(star, 1 - np.prod(1 - di, axis=0), atol=1e-12)
    assert np.all(star >= delta - 1e-15)
    # the heavy contributor is the most exposed individual
    assert res["top_individual"].to_numpy()[0] == 3
    assert res["most_exposed"].sel(epsilon=0.5, method="nearest").item() == 3
    # bisection-refined eps at the targets: delta there is the target
    for t, e in zip(res["target"].to_numpy(), res["epsilon_delta"].to_numpy(), strict=True):
        assert np.isfinite(e)
        k = np.searchsorted(eps, e)
        assert delta[k - 1] > t >= delta[k]
    assert edpq.epsilon_at(res, 0.01) == res["epsilon_delta"].sel(target=0.01).item()
    assert eps[0] <= edpq.epsilon_at(res, 0.05, kind="delta_star") <= eps[-1]
    # densities for the plots integrate to one; quadrature diagnostics recorded
    grid = res["grid"].to_numpy()
    assert np.trapezoid(res["density"].to_numpy(), grid) == pytest.approx(1.0, abs=1e-6)
    assert res.attrs["max_mass_error"] < 1e-6
    assert set(res["test"].to_numpy()) == {"ljung_box_ranks", "runs", "ks_halves"}


def test_query_edp_netcdf_round_trip(audit, tmp_path):
    path = tmp_path / "audit.nc"
    audit.to_netcdf(path)
    with xr.open_dataset(path) as back:
        xr.testing.assert_allclose(back.load(), audit)
        model = edpq.DensityModel.from_attrs(back.attrs)
    assert model.method == "variable-kde"


# --------------------------------------------------------------------------------------
# The worked example of docs/query.md
# --------------------------------------------------------------------------------------
def test_grunfeld_worked_example():
    """The numbers quoted in docs/query.md (tests/reference/query_grunfeld_example.py)."""
    pytest.importorskip("statsmodels")
    from query_grunfeld_example import run

    out = run(figures=False)
    assert (out["n_databases"], out["n_individuals"]) == (19, 11)
    # the pre-check accepts independence of the yearly growth rates (each test at 0.05 / 3)
    assert min(out["independence_pvalue"].values()) > 0.05 / 3
    assert out["top_individuals"][:2] == ["General Motors", "US Steel"]
    # Deterministic computation; 2% absorbs floating-point differences across BLAS builds
    # and the bounded-Brent bandwidth search (documented: 0.351, 0.392, 0.086).
    assert out["epsilon_delta_0.01"] == pytest.approx(0.351, rel=0.02)
    assert out["epsilon_delta_star_0.01"] == pytest.approx(0.392, rel=0.02)
    assert out["delta_at_0"] == pytest.approx(0.086, rel=0.02)
    assert out["noise_scale"] >= out["noise_scale_hausdorff"]
    assert out["noised_delta_at_eps"] <= 0.01
    assert out["noise_laplace_kernel_mean_abs"] < out["noise_scale"]
    assert out["side_delta_at_0.1"] > out["delta_at_0.1"]
