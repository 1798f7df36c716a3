"""Large audits: exact pruning, log-likelihoods streamed from the model or read lazily, dask.

Pruned and full audits must give the same epsilon bit for bit; the model-streamed and the
stored log-likelihood agree to rounding; a lazy (zarr, dask) group and a dask ``Client``
give exactly the serial numbers.
"""

import numpy as np
import pymc as pm
import pytest
import xarray as xr
from scipy import special, stats
from support import set_group

import pymc_edp as edp
from pymc_edp.auditing import TOP_WEIGHTS
from pymc_edp.model.compat import from_dict, get_group


def _regression(rng, n=3000, s=1000, p=3):
    """Normal regression with known sigma: exact Gaussian posterior draws of beta."""
    x = np.column_stack([np.ones(n), rng.normal(size=(n, p - 1))])
    beta_true = np.array([0.5, 1.0, -0.7])[:p]
    y = x @ beta_true + rng.normal(size=n)
    y[:3] += 6  # a few outliers
    prec = x.T @ x + np.eye(p) / 100
    cov = np.linalg.inv(prec)
    mean = cov @ x.T @ y
    beta = rng.multivariate_normal(mean, cov, size=(2, s // 2))
    ll = stats.norm.logpdf(y, np.einsum("cdp,np->cdn", beta, x), 1.0)
    idata = from_dict(
        {
            "posterior": {"beta": beta},
            "log_likelihood": {"y": ll},
            "observed_data": {"y": y},
        },
        dims={"beta": ["coef"], "y": ["obs"]},
    )
    return idata, x, y


def _same(pruned, full):
    assert pruned.epsilon == full.epsilon
    assert pruned.epsilon_by_var.equals(full.epsilon_by_var)
    kept = pruned.pointwise["method"].values != "pruned"
    np.testing.assert_array_equal(
        pruned.pointwise["epsilon"].values[kept], full.pointwise["epsilon"].values[kept]
    )
    # the bound is computed for every neighbour and never below the full epsilon
    np.testing.assert_array_equal(
        pruned.pointwise["epsilon_bound"].values, full.pointwise["epsilon_bound"].values
    )
    assert np.all(full.pointwise["epsilon"] <= full.pointwise["epsilon_bound"] * (1 + 1e-9))
    for name, node in pruned.parameters.children.items():
        exact = node["exact"].values
        np.testing.assert_array_equal(
            node["epsilon"].values[exact], full.parameters[name]["epsilon"].values[exact]
        )
    return int((~kept).sum())


def test_pruned_equals_full_normal_regression(rng):
    idata, _, _ = _regression(rng)
    kw = dict(bins=10, method="psis", progressbar=False)
    full = edp.audit(idata, chunks={"prune": False}, **kw)
    pruned = edp.audit(idata, chunks={"prune": True, "memory": "4MiB"}, **kw)
    n_pruned = _same(pruned, full)
    # most records move the posterior far less than the outliers (78% pruned here)
    assert n_pruned > 0.5 * 3000
    # a pruned audit keeps the weights of the neighbours that can set epsilon only
    assert pruned.log_weights.sizes["neighbour"] == TOP_WEIGHTS
    assert full.log_weights.sizes["neighbour"] == 3000
    kept = pruned.log_weights["neighbour_index"].values
    assert set(np.argsort(-full.pointwise["epsilon"].values)[:5]) <= set(kept)
    np.testing.assert_allclose(pruned.interval()["epsilon"], full.interval()["epsilon"])
    assert set(np.unique(pruned.pointwise["method"].values)) == {"psis", "pruned"}
    pruned_rows = pruned.pointwise["method"].values == "pruned"
    assert np.isnan(pruned.pointwise["epsilon"].values[pruned_rows]).all()


def test_pruned_result_round_trips(rng, tmp_path):
    idata, _, _ = _regression(rng, n=600)
    res = edp.audit(idata, bins=10, method="psis", chunks={"prune": True}, progressbar=False)
    res.to_netcdf(tmp_path / "res.nc")
    back = edp.EDPResult.from_netcdf(tmp_path / "res.nc")
    assert back.epsilon == res.epsilon
    np.testing.assert_array_equal(back.pointwise["epsilon_bound"], res.pointwise["epsilon_bound"])
    np.testing.assert_array_equal(back.pointwise["method"], res.pointwise["method"])
    xr.testing.assert_identical(back.parameters, res.parameters)


def test_prune_default_follows_the_threshold(rng):
    idata, _, _ = _regression(rng, n=400)
    kw = dict(bins=10, method="psis", progressbar=False)
    small = edp.audit(idata, **kw)
    assert "pruned" not in small.pointwise["method"].values
    big = edp.audit(idata, chunks={"prune_above": 1000}, **kw)
    assert big.epsilon == small.epsilon
    with pytest.raises(ValueError, match="store_weights=True"):
        edp.audit(idata, chunks={"prune": True, "store_weights": True}, **kw)
    with pytest.raises(ValueError, match="store_weights=True"):  # pruned by the threshold
        edp.audit(idata, chunks={"prune_above": 1000, "store_weights": True}, **kw)
    with pytest.raises(TypeError, match="prune"):
        edp.audit(idata, chunks={"prune": "yes"}, **kw)


def test_pruned_equals_full_grouped(rng):
    idata, _, _ = _regression(rng, n=1200)
    groups = np.repeat(np.arange(300), 4)
    kw = dict(bins=10, method="psis", neighbour={"groups": groups}, progressbar=False)
    full = edp.audit(idata, chunks={"prune": False}, **kw)
    pruned = edp.audit(idata, chunks={"prune": True, "memory": "2MiB"}, **kw)
    assert _same(pruned, full) > 0


def _logistic(rng, n=1500, s=1000):
    x = np.column_stack([np.ones(n), rng.normal(size=(n, 2))])
    x[:4, 1] = 4.0  # an outlying covariate pattern
    y = rng.binomial(1, special.expit(x @ np.array([-0.3, 0.8, 0.5])))
    with pm.Model() as model:
        xd = pm.Data("x", x)
        beta = pm.Normal("beta", 0, 2, shape=3)
        pm.Bernoulli("y", logit_p=xd @ beta, observed=y)
    # draws from the Laplace approximation (the test is about pruning, not the posterior)
    fit = special.expit(x @ np.array([-0.3, 0.8, 0.5]))
    cov = np.linalg.inv(x.T @ (x * (fit * (1 - fit))[:, None]) + np.eye(3) / 4)
    beta_draws = rng.multivariate_normal([-0.3, 0.8, 0.5], cov, size=(2, s // 2))
    eta = np.einsum("cdp,np->cdn", beta_draws, x)
    ll = stats.bernoulli.logpmf(y, special.expit(eta))
    idata = from_dict(
        {
            "posterior": {"beta": beta_draws},
            "log_likelihood": {"y": ll},
            "observed_data": {"y": y},
        },
        dims={"y": ["obs"]},
    )
    return idata, model


def test_pruned_equals_full_logistic_replace(rng):
    idata, model = _logistic(rng)
    kw = dict(bins=10, method="psis", neighbour="replace", progressbar=False)
    full = edp.audit(idata, model, chunks={"prune": False}, **kw)
    pruned = edp.audit(idata, model, chunks={"prune": True, "memory": "4MiB"}, **kw)
    assert _same(pruned, full) > 0
    kept = pruned.pointwise["method"].values != "pruned"
    np.testing.assert_array_equal(
        pruned.pointwise["worst_replacement"].values[kept],
        full.pointwise["worst_replacement"].values[kept],
    )


def test_streamed_from_model_equals_the_group(rng):
    idata, model = _logistic(rng, n=600)
    kw = dict(bins=10, method="psis", progressbar=False)
    stored = edp.audit(idata, model, **kw)
    streamed = edp.audit(idata, model, log_likelihood="model", **kw)
    np.testing.assert_allclose(
        streamed.pointwise["epsilon"], stored.pointwise["epsilon"], rtol=1e-9
    )
    np.testing.assert_allclose(
        streamed.pointwise["pareto_k"], stored.pointwise["pareto_k"], rtol=1e-9
    )
    with pytest.raises(ValueError, match="log_likelihood='model'"):
        edp.audit(idata, log_likelihood="model", **kw)


def test_group_source_requires_the_group(rng):
    idata, model = _logistic(rng, n=50)
    post = from_dict({"posterior": dict(get_group(idata, "posterior").data_vars)})
    with pytest.raises(ValueError, match="no 'log_likelihood' group"):
        edp.audit(post, model, log_likelihood="group", bins=5, progressbar=False)


def test_lazy_zarr_group_is_read_chunk_by_chunk(rng, tmp_path):
    pytest.importorskip("zarr")
    pytest.importorskip("dask")
    idata, _, _ = _regression(rng, n=800)
    stored = get_group(idata, "log_likelihood").chunk({"chain": -1, "draw": -1, "obs": 100})
    stored.to_zarr(tmp_path / "ll.zarr", consolidated=False)
    lazy_ll = xr.open_zarr(tmp_path / "ll.zarr", chunks={"obs": 100}, consolidated=False)
    assert lazy_ll["y"].chunks is not None
    lazy, _, _ = _regression(np.random.default_rng(0), n=800)  # same layout
    for name in ("posterior", "observed_data"):
        set_group(lazy, name, get_group(idata, name))
    set_group(lazy, "log_likelihood", lazy_ll)
    kw = dict(bins=10, method="psis", progressbar=False, chunks={"memory": "2MiB"})
    a = edp.audit(idata, **kw)
    b = edp.audit(lazy, **kw)
    np.testing.assert_array_equal(a.pointwise["epsilon"], b.pointwise["epsilon"])
    # a lazy group's weights (6.4 MB) are not kept beyond the memory budget (2 MiB): only
    # those of the neighbours that can set epsilon
    assert b.log_weights.sizes["neighbour"] == TOP_WEIGHTS < a.log_weights.sizes["neighbour"]
    np.testing.assert_allclose(b.interval()["epsilon"], a.interval()["epsilon"])


def test_dask_client_gives_the_serial_numbers(rng):
    distributed = pytest.importorskip("distributed")
    idata, _, _ = _regression(rng, n=1000)
    kw = dict(bins=10, method="psis", progressbar=False)
    serial = edp.audit(idata, chunks={"prune": False, "memory": "2MiB"}, **kw)
    with (
        distributed.LocalCluster(
            n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        opts = {"memory": "2MiB", "executor": client}
        par = edp.audit(idata, chunks={**opts, "prune": False}, **kw)
        pruned = edp.audit(idata, chunks={**opts, "prune": True}, **kw)
    np.testing.assert_array_equal(par.pointwise["epsilon"], serial.pointwise["epsilon"])
    np.testing.assert_array_equal(par.log_weights, serial.log_weights)
    assert pruned.epsilon == serial.epsilon


def _streamed_regression(n: int, s: int, seed: int):
    """A PyMC Normal regression (known sigma) and exact posterior draws, no log-likelihood.

    The audit streams the log-likelihood from the model, chunk by chunk.
    """
    rng = np.random.default_rng(seed)
    x = rng.normal(size=n)
    y = 0.5 + 0.3 * x + rng.normal(size=n)
    design = np.column_stack([np.ones(n), x])
    cov = np.linalg.inv(design.T @ design + np.eye(2) / 100)
    mean = cov @ design.T @ y
    beta = rng.multivariate_normal(mean, cov, size=(2, s // 2))
    with pm.Model() as model:
        xd = pm.Data("x", x)
        b0 = pm.Normal("b0", 0.0, 10.0)
        b1 = pm.Normal("b1", 0.0, 10.0)
        pm.Normal("y", b0 + b1 * xd, 1.0, observed=y)
    idata = from_dict(
        {"posterior": {"b0": beta[..., 0], "b1": beta[..., 1]}, "observed_data": {"y": y}}
    )
    return idata, model


def _interval_everywhere(res, tmp_path) -> None:
    """The 90% interval is printed, computed, and the same after a netCDF round trip."""
    lo, hi = res.mc_interval90
    assert 0 < lo <= res.epsilon <= hi < np.inf
    assert f"90% Monte-Carlo interval of epsilon: [{lo:.3f}, {hi:.3f}]" in repr(res)
    np.testing.assert_allclose(res.interval()["epsilon"].values, [lo, hi])
    assert np.isfinite(float(res.mcse()["epsilon"]))
    path = tmp_path / "audit.nc"
    res.to_netcdf(path)
    back = edp.EDPResult.from_netcdf(path)
    assert back.log_weights is None
    np.testing.assert_allclose(back.interval()["epsilon"].values, [lo, hi])
    assert float(back.mcse()["epsilon"]) == pytest.approx(float(res.mcse()["epsilon"]))
    assert repr(back) == repr(res)
    page = back._repr_html_()
    assert "90% Monte-Carlo interval" in page and f"[{lo:.3f}, {hi:.3f}]" in page


@pytest.mark.slow
def test_a_million_records_pruned_and_streamed_have_an_interval(tmp_path):
    """10^6 records x 400 draws, streamed from the model and pruned: the headline has its
    interval, from the weights of the records that can set it (the only ones kept)."""
    idata, model = _streamed_regression(1_000_000, 400, seed=6)
    res = edp.audit(idata, model, bins=10, progressbar=False, method=edp.Auto(verify=False))
    assert (res.pointwise["method"].values == "pruned").sum() > 950_000
    assert res.log_weights.sizes["neighbour"] == TOP_WEIGHTS
    assert "verification turned off" in repr(res)
    _interval_everywhere(res, tmp_path)


@pytest.mark.slow
def test_twenty_thousand_records_with_default_settings_have_an_interval(tmp_path):
    """20,000 records x 4,000 draws, the default audit: streamed, verified by refits."""
    idata, model = _streamed_regression(20_000, 4000, seed=7)
    res = edp.audit(idata, model, progressbar=False, random_seed=1)
    assert res.verification == "confirmed"
    assert res.log_weights.sizes["neighbour"] < res.n_neighbours
    _interval_everywhere(res, tmp_path)


# ------------------------------------------------------------- replacement, streamed
def _poisson(rng, n=1500, s=1000):
    """A Poisson log-link regression and draws around the truth, without a log-likelihood."""
    x = np.column_stack([np.ones(n), rng.normal(size=n)])
    x[:3, 1] = 3.5  # an outlying covariate pattern
    y = rng.poisson(np.exp(x @ np.array([0.4, 0.5])))
    with pm.Model() as model:
        xd = pm.Data("x", x)
        beta = pm.Normal("beta", 0, 2, shape=2)
        pm.Poisson("y", mu=pm.math.exp(xd @ beta), observed=y)
    draws = np.array([0.4, 0.5]) + 0.03 * rng.normal(size=(2, s // 2, 2))
    idata = from_dict({"posterior": {"beta": draws}, "observed_data": {"y": y}})
    return idata, model, y


def _no_group(idata):
    return from_dict(
        {
            "posterior": {"beta": get_group(idata, "posterior")["beta"].values},
            "observed_data": {"y": get_group(idata, "observed_data")["y"].values},
        }
    )


@pytest.mark.slow
@pytest.mark.both_stacks
# the outlying records' large replacements have k-hat near 0.7: a reliability warning, not
# what is tested here
@pytest.mark.filterwarnings("ignore:Pareto k-hat:pymc_edp.base.common.EDPWarning")
@pytest.mark.parametrize("case", ["flip", "candidates", "per_record"])
def test_streamed_replace_pruned_equals_unpruned(rng, case):
    """Replacement log-likelihoods computed chunk by chunk from the model, pruned or not."""
    if case == "flip":
        idata, model = _logistic(rng)
        idata = _no_group(idata)
        neighbour = edp.Replace()
    else:
        idata, model, y = _poisson(rng)
        if case == "candidates":
            neighbour = edp.Replace([0, 4, 12])
        else:  # two replacements per record: y + 5 and max(y - 2, 0)
            values = np.stack([y + 5, np.maximum(y - 2, 0)])
            neighbour = edp.Replace(edp.PerRecord(values))
    kw = dict(
        bins=10, method="psis", progressbar=False, neighbour=neighbour, log_likelihood="model"
    )
    full = edp.audit(idata, model, chunks={"prune": False}, **kw)
    pruned = edp.audit(idata, model, chunks={"prune": True, "memory": "4MiB"}, **kw)
    assert _same(pruned, full) > 0
    kept = pruned.pointwise["method"].values != "pruned"
    np.testing.assert_array_equal(
        pruned.pointwise["worst_replacement"].values[kept],
        full.pointwise["worst_replacement"].values[kept],
    )
    # the same audit from replacement log-likelihoods held in memory (PyMC's own graph)
    held = edp.audit(idata, model, chunks={"prune": False, "memory": "1GiB"}, **kw)
    np.testing.assert_allclose(held.pointwise["epsilon"], full.pointwise["epsilon"], rtol=1e-9)


@pytest.mark.slow
@pytest.mark.both_stacks
def test_streamed_replace_on_a_dask_cluster_gives_the_serial_numbers(rng):
    """Workers compute their chunks' replacement columns (pickling: tests/model/test_stream)."""
    distributed = pytest.importorskip("distributed")
    idata, model, _ = _poisson(rng, n=800)
    kw = dict(
        bins=10,
        method="psis",
        progressbar=False,
        neighbour=edp.Replace([1, 6]),
        log_likelihood="model",
    )
    opts = {"memory": "2MiB"}
    serial = edp.audit(idata, model, chunks={**opts, "prune": False}, **kw)
    with (
        distributed.LocalCluster(
            n_workers=2, processes=False, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        par = edp.audit(idata, model, chunks={**opts, "executor": client, "prune": False}, **kw)
        pruned = edp.audit(idata, model, chunks={**opts, "executor": client, "prune": True}, **kw)
    np.testing.assert_array_equal(par.pointwise["epsilon"], serial.pointwise["epsilon"])
    assert _same(pruned, serial) > 0
