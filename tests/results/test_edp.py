import dataclasses
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats

import pymc_edp as edp
from pymc_edp import EDPResult
from pymc_edp.model.compat import from_dict
from pymc_edp.model.convergence import FitConvergence


@pytest.fixture
def result(rng):
    y = rng.normal(0, 1, 10)
    mu = rng.normal(y.sum() / 11, 1 / np.sqrt(11), (2, 1000))
    theta = mu[..., None] + rng.normal(0, 0.1, (2, 1000, 3))
    idata = from_dict(
        {
            "posterior": {"mu": mu, "theta": theta},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1)},
        },
        coords={"patient": [f"p{i}" for i in range(10)], "arm": ["a", "b", "c"]},
        dims={"y": ["patient"], "theta": ["arm"]},
    )
    return edp.audit(idata, bins=10, method="psis", progressbar=False)


def test_summary_and_views(result):
    df = result.summary()
    assert list(df.index) == ["mu", "theta[a]", "theta[b]", "theta[c]"]
    assert list(df.columns) == [
        "var_name",
        "epsilon",
        "lower_bound",
        "worst_neighbour",
        "worst_bin",
        "n_bins",
    ]
    assert not df["lower_bound"].any()
    assert df["epsilon"].max() == result.epsilon
    assert result.epsilon_by_var["theta"].max() == df.loc[df.var_name == "theta", "epsilon"].max()
    top = result.most_exposed(3)
    assert list(top["epsilon"]) == sorted(result.pointwise["epsilon"].values)[::-1][:3]
    assert top.index[0] == result.worst_neighbour
    assert result.pointwise["epsilon"].sel(neighbour=result.worst_neighbour) == result.epsilon


def test_repr_is_a_table(result):
    text = repr(result)
    assert "B = 10" in text
    assert "10 neighbours (record removed)" in text
    assert "theta[b]" in text
    assert f"epsilon = {result.epsilon:.3f}" in text
    assert "Pareto k diagnostic values" in text


def assert_same(a: EDPResult, b: EDPResult):
    assert a.epsilon == b.epsilon
    assert a.epsilon_by_var.equals(b.epsilon_by_var)
    assert (a.bins, a.neighbour, a.method, a.smoothing) == (
        b.bins,
        b.neighbour,
        b.method,
        b.smoothing,
    )
    assert (a.n_samples, a.reff, a.khat_threshold, a.warnings) == (
        b.n_samples,
        b.reff,
        b.khat_threshold,
        b.warnings,
    )
    xr.testing.assert_identical(a.pointwise, b.pointwise)
    xr.testing.assert_identical(a.parameters, b.parameters)


def test_dataset_round_trip(result):
    back = EDPResult.from_dataset(result.to_dataset())
    assert_same(result, back)
    assert back.log_weights is None
    full = EDPResult.from_dataset(result.to_dataset(include_weights=True))
    xr.testing.assert_equal(full.log_weights, result.log_weights)
    xr.testing.assert_equal(full.draws, result.draws)


@pytest.mark.parametrize("engine", ["netcdf4", "h5netcdf"])
def test_netcdf_round_trip(result, tmp_path, engine):
    path = tmp_path / "audit.nc"
    result.to_netcdf(path, include_weights=True, engine=engine)
    back = EDPResult.from_netcdf(path)
    assert_same(result, back)
    np.testing.assert_array_equal(back.log_weights.values, result.log_weights.values)
    assert repr(back) == repr(result)


#: Fields to_netcdf writes only with include_weights=True.
WITH_WEIGHTS = {"log_weights", "draws"}
#: Fields to_netcdf never writes (read back as their default), and why.
NOT_SAVED = {
    "refits": "refitted traces: RefitOptions(checkpoint=...) keeps them",
}


def _same_value(a, b):
    """Equal, and of the same type (tuples: element by element)."""
    if isinstance(a, (xr.Dataset, xr.DataArray, xr.DataTree)):
        xr.testing.assert_identical(b, a)
        return
    assert type(b) is type(a)
    assert b == a
    if isinstance(a, tuple):
        assert [type(x) for x in b] == [type(x) for x in a]
    if isinstance(a, dict):
        assert {k: type(v) for k, v in b.items()} == {k: type(v) for k, v in a.items()}


@pytest.mark.parametrize(
    "changes",
    [
        {"random_seed": 123},
        {
            "random_seed": None,
            "noise_floor": None,
            "mc_interval90": None,
            "warnings": ("first warning", "second"),
            "verification": "confirmed",
            "verification_note": "confirmed by 2 refits",
            "count_smoothing": 0.5,
        },
        {
            "random_seed": 7,
            "convergence": FitConvergence(
                n_chains=2,
                max_rhat=1.12,
                rhat_var="h",
                min_ess_bulk=45.0,
                ess_bulk_var="h",
                min_ess_tail=300.0,
                ess_tail_var="h",
                n_divergent=3,
            ),
        },
    ],
    ids=["seed_123", "seed_none", "not_converged"],
)
def test_netcdf_round_trips_every_field(result, tmp_path, changes):
    """Every field comes back with its type, except those to_netcdf documents as not saved.

    A new field of EDPResult fails here until it is saved (and checked) or listed as not.
    """
    res = dataclasses.replace(result, **changes)
    res.to_netcdf(tmp_path / "plain.nc")
    res.to_netcdf(tmp_path / "weights.nc", include_weights=True)
    plain = EDPResult.from_netcdf(tmp_path / "plain.nc")
    weights = EDPResult.from_netcdf(tmp_path / "weights.nc")
    assert plain.random_seed == changes["random_seed"]
    fields = {f.name: f for f in dataclasses.fields(EDPResult)}
    saved = set(fields) - WITH_WEIGHTS - set(NOT_SAVED)
    assert saved >= {"random_seed", "mc_interval90", "noise_floor", "verification"}
    for name in saved:
        _same_value(getattr(res, name), getattr(plain, name))
        _same_value(getattr(res, name), getattr(weights, name))
    for name in WITH_WEIGHTS:
        assert getattr(res, name) is not None
        assert getattr(plain, name) is None
        _same_value(getattr(res, name), getattr(weights, name))
    for name in NOT_SAVED:
        f = fields[name]
        default = f.default_factory() if f.default is dataclasses.MISSING else f.default
        assert getattr(plain, name) == default
        assert getattr(weights, name) == default
    assert repr(weights) == repr(res)
    if res.convergence is not None and not res.convergence.converged:  # said after reading
        assert plain.convergence.note() in repr(plain)
        assert "The rhat statistic is larger than 1.01" in plain._repr_html_()


def test_to_netcdf_into_a_missing_folder_says_to_create_it(result, tmp_path):
    folder = tmp_path / "not" / "there"
    with pytest.raises(FileNotFoundError, match=r"folder .*there.* does not exist.*os\.makedirs"):
        result.to_netcdf(folder / "audit.nc")
    assert not folder.exists()
    folder.mkdir(parents=True)
    result.to_netcdf(folder / "audit.nc")
    assert EDPResult.from_netcdf(folder / "audit.nc").epsilon == result.epsilon


@pytest.mark.parametrize("fmt", ["netcdf", "zarr"])
def test_datatree_round_trip_beside_the_posterior(rng, tmp_path, fmt):
    """The audit as a group of the user's DataTree, written and read back with xarray."""
    y = rng.normal(0, 1, 10)
    mu = rng.normal(y.sum() / 11, 1 / np.sqrt(11), (2, 1000))
    idata = from_dict(
        {"posterior": {"mu": mu}, "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None])}}
    )
    res = edp.audit(idata, bins=10, method="psis", progressbar=False)
    tree = res.to_datatree(idata, include_weights=True)
    assert set(tree.children) == {"posterior", "log_likelihood", "edp_audit"}
    if fmt == "netcdf":
        path = tmp_path / "fit.nc"
        tree.to_netcdf(path)
        back_tree = xr.open_datatree(path)
    else:
        path = tmp_path / "fit.zarr"
        # zarr format 3 has no stable spec for string arrays (labels) yet and warns
        tree.to_zarr(path, zarr_format=2)
        back_tree = xr.open_datatree(path, engine="zarr")
    back = EDPResult.from_datatree(back_tree)
    assert_same(res, back)
    np.testing.assert_array_equal(back.log_weights.values, res.log_weights.values)
    # the posterior travels with it and is audited to the same numbers
    again = edp.audit(back_tree, bins=10, method="psis", progressbar=False)
    assert again.epsilon == res.epsilon
    back_tree.close()
    with pytest.raises(ValueError, match="already has a group"):
        res.to_datatree(tree)
    with pytest.raises(KeyError, match="no audit group"):
        EDPResult.from_datatree(back_tree, group="nope")


def test_round_trip_keeps_warnings(rng):
    mu = rng.normal(0.0, 0.05, (2, 1000))
    ll = stats.norm.logpdf(np.array([0.0, 8.0]), mu[..., None], 0.3)
    with pytest.warns(edp.EDPWarning):
        res = edp.audit(
            from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}}),
            bins=5,
            progressbar=False,
        )
    back = EDPResult.from_dataset(res.to_dataset())
    assert back.warnings == res.warnings != ()


def test_from_dataset_rejects_foreign():
    with pytest.raises(ValueError, match="not written by EDPResult"):
        EDPResult.from_dataset(xr.Dataset())


def test_a_result_holds_data_only(result):
    """What the diagnostics cache on the result is never saved."""
    assert "_memo" not in {f.name for f in dataclasses.fields(result)}
    assert not hasattr(result, "memo")
    before = result.to_dataset(include_weights=True)
    result.mcse()
    xr.testing.assert_identical(result.to_dataset(include_weights=True), before)


def untouched_parameter_audit(seed=0):
    """A posterior with a parameter ``z`` that no record informs: its true epsilon is 0."""
    rng = np.random.default_rng(seed)
    y = rng.normal(0, 1, 50)
    mu = rng.normal(y.mean(), 1 / np.sqrt(50), (2, 500))
    z = rng.normal(0, 1, (2, 500))
    ll = stats.norm.logpdf(y, mu[..., None], 1)
    idata = from_dict({"posterior": {"mu": mu, "z": z}, "log_likelihood": {"y": ll}})
    return edp.audit(idata, var_names="z", bins=10, method="psis", progressbar=False)


def test_print_shows_the_interval_and_a_caution_where_it_reaches_zero():
    """Beside epsilon: its 90% Monte-Carlo interval, and the caution the interval calls for.

    ``z`` is untouched by every record, so the true epsilon is 0: the estimate is Monte-Carlo
    noise and its interval reaches 0. The caution says so, in the printout, in diagnose()
    and in the HTML view (beside epsilon and among the warnings), in the same words; EMI is
    not printed as a verdict.
    """
    res = untouched_parameter_audit()
    lo, hi = res.mc_interval90
    assert lo == 0.0 < res.epsilon <= hi
    iv = res.interval(0.9)["epsilon"].values
    assert (lo, hi) == (float(iv[0]), float(iv[1]))
    text = repr(res)
    assert f"90% Monte-Carlo interval of epsilon: [{lo:.3f}, {hi:.3f}]" in text
    caution = edp.report.headline(res).caution
    assert "reaches 0" in caution
    assert f"Caution: {caution}" in text and f"Caution: {caution}" in res.diagnose()
    assert "EMI" not in text
    back = EDPResult.from_dataset(res.to_dataset())
    assert back.mc_interval90 == res.mc_interval90 and back.noise_floor == res.noise_floor
    assert repr(back) == text


@pytest.fixture(scope="module")
def large_audits():
    """One audit keeping every neighbour's weights and one keeping 32 of 60 (pruning on)."""
    rng = np.random.default_rng(60)
    y = rng.normal(0.0, 1.0, 60)
    y[7] = 4.0
    mu = rng.normal(y.sum() / 61, 1 / np.sqrt(61), (2, 500))
    idata = from_dict(
        {
            "posterior": {"mu": mu},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1.0)},
        }
    )
    run = dict(bins=10, method="psis", progressbar=False)
    full = edp.audit(idata, **run)
    kept = edp.audit(idata, chunks={"prune": True}, **run)
    assert full.log_weights.sizes["neighbour"] == 60
    assert kept.log_weights.sizes["neighbour"] == 32
    return full, kept


def _same_uncertainty(a: EDPResult, b: EDPResult):
    for method in ("interval", "mcse"):
        np.testing.assert_allclose(
            getattr(a, method)()["epsilon_i"].values,
            getattr(b, method)()["epsilon_i"].values,
            rtol=1e-12,
            equal_nan=True,
        )


def test_kept_weights_of_a_large_audit_read_back_where_they_were(large_audits, tmp_path):
    # only 32 of 60 neighbours' weights: stored on the neighbour dimension they were
    # aligned to all 60, with a NaN index read back as -2**63 (an IndexError in interval())
    _, kept = large_audits
    path = tmp_path / "kept.nc"
    kept.to_netcdf(path, include_weights=True)
    back = EDPResult.from_netcdf(path)
    xr.testing.assert_equal(back.log_weights, kept.log_weights)
    _same_uncertainty(back, kept)


def test_a_round_trip_without_weights_keeps_every_interval_there_was(large_audits, tmp_path):
    # the audit stores the intervals of the 32 neighbours that can set epsilon; the others'
    # came from the weights, and were NaN read back without them, with no word why
    full, kept = large_audits
    for res in (full, kept):
        path = tmp_path / "audit.nc"
        res.to_netcdf(path)
        back = EDPResult.from_netcdf(path)
        assert back.log_weights is None
        _same_uncertainty(back, res)

    # where no weights were kept, the intervals say why they are missing, and what to do
    for res in (kept, EDPResult.from_netcdf(path)):
        for ds in (res.interval(), res.mcse()):
            assert np.isnan(ds["epsilon_i"].values).any()
            assert ds.attrs["note"].startswith("28 of 60 neighbours have no")
            assert "'store_weights': True, 'prune': False" in ds.attrs["note"]
    assert "note" not in full.interval().attrs and "note" not in full.mcse().attrs


def test_per_parameter_data_keep_the_posterior_dims(result):
    """Tables, per-neighbour epsilons and draws are over each variable's own dims and coords."""
    theta = result.parameters["theta"]
    assert theta["epsilon"].dims == ("arm",) and list(theta["arm"].values) == ["a", "b", "c"]
    assert theta["epsilon_neighbour"].dims == ("neighbour", "arm")
    assert result.parameters["mu"]["epsilon"].dims == ()
    assert result.draws["theta"].dims == ("arm", "sample")
    # the flat view is the same numbers, labelled
    df = result.summary()
    for arm in "abc":
        assert df.loc[f"theta[{arm}]", "epsilon"] == float(theta["epsilon"].sel(arm=arm))
        worst = theta["epsilon_neighbour"].sel(arm=arm).max("neighbour")
        assert float(worst) == df.loc[f"theta[{arm}]", "epsilon"]
    eps = [n["epsilon_neighbour"].values.reshape(10, -1) for n in result.parameters.leaves]
    np.testing.assert_array_equal(np.hstack(eps).max(1), result.pointwise["epsilon"].values)
    xr.testing.assert_identical(result.epsilon_by_var["theta"], theta["epsilon"].rename("theta"))


def test_a_result_saved_by_0_8_reads_back(tmp_path):
    """A format-1 file (flat tables) reads into today's layout: each flat row in its place.

    The file was written by ``tests/reference/audit_format1.py`` with pymc_edp 0.8.
    """
    path = Path(__file__).parent / "data" / "audit_format1.nc"
    old = EDPResult.from_netcdf(path)
    with xr.open_dataset(path) as ds:
        flat = ds.load()
    assert flat.attrs["pymc_edp_result"] == 1
    rows = {"mu": ("mu", {}), "theta[a]": ("theta", {"arm": "a"})}
    rows["theta[b]"] = ("theta", {"arm": "b"})
    assert list(flat["parameter"].values) == list(rows)
    for label, (name, at) in rows.items():
        node, row = old.parameters[name].to_dataset().sel(at), flat.sel(parameter=label)
        for v in ("epsilon", "worst_bin", "n_bins", "exact", "limit"):
            assert node[v].item() == row[f"parameter_{v}"].item()
        assert node["worst_neighbour"].item() == str(row["parameter_worst_neighbour"].item())
        np.testing.assert_array_equal(
            node["epsilon_neighbour"], row["pointwise_epsilon_parameter"]
        )
        np.testing.assert_array_equal(old.draws[name].sel(at), row["draws"])
    # the constant element left out: in its place, marked and empty
    c = old.parameters["theta"].to_dataset().sel(arm="c")
    assert not c["audited"] and np.isnan(c["epsilon"]) and c["worst_neighbour"] == ""
    assert old.summary().index.tolist() == list(rows)
    assert old.parameters["theta"]["limit"].attrs["flag_meanings"].startswith("none")
    old.to_netcdf(tmp_path / "again.nc", include_weights=True)
    again = EDPResult.from_netcdf(tmp_path / "again.nc")
    assert again.to_dataset().attrs["pymc_edp_result"] == 2
    xr.testing.assert_identical(again.parameters, old.parameters)
    xr.testing.assert_identical(again.draws, old.draws)


def test_a_posterior_dim_named_neighbour_is_renamed_in_the_tables(rng, tmp_path):
    """A variable's own dim ``neighbour`` would clash with the tables': ``<var>_neighbour``."""
    y = rng.normal(0, 1, 6)
    mu = rng.normal(y.sum() / 7, 1 / np.sqrt(7), (2, 500))
    w = mu[..., None] + rng.normal(0, 0.1, (2, 500, 2))
    idata = from_dict(
        {
            "posterior": {"mu": mu, "w": w},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1)},
        },
        coords={"neighbour": ["a", "b"]},
        dims={"w": ["neighbour"]},
    )
    res = edp.audit(idata, bins=5, method="psis", progressbar=False)
    assert res.parameters["w"]["epsilon_neighbour"].dims == ("neighbour", "w_neighbour")
    assert res.pointwise.sizes["neighbour"] == 6 and res.draws["w"].dims == (
        "w_neighbour",
        "sample",
    )
    assert list(res.summary().index) == ["mu", "w[a]", "w[b]"]
    res.to_netcdf(tmp_path / "res.nc", include_weights=True)
    back = EDPResult.from_netcdf(tmp_path / "res.nc")
    xr.testing.assert_identical(back.parameters, res.parameters)
    xr.testing.assert_identical(back.draws, res.draws)
