import numpy as np
import pytest
import xarray as xr
from support import loglik_dataset, stack_psislw

from pymc_edp.base.limits import LOG_RATIO_RESOLUTION
from pymc_edp.base.psis import PSIS_TAIL_RULE, psislw
from pymc_edp.core.loglik import (
    LogLikelihood,
    log_ratios,
    relative_efficiency,
    smoothed_log_weights,
)
from pymc_edp.core.neighbours import Neighbours


def _weights(ll, nbs, reff=1.0, replacement=None):
    """Smoothed log-weights and k-hat of every neighbour, as the audit's chunks compute them."""
    return smoothed_log_weights(log_ratios(ll, nbs, 0, len(nbs), replacement), reff)


def test_loglik_layout_and_gather(rng):
    ds = loglik_dataset(rng)
    ll = LogLikelihood.from_dataset(ds)
    assert ll.names == ("y", "z")
    assert ll.n_samples == 1000
    assert ll.n_rows == 12
    np.testing.assert_array_equal(ll.offsets, [0, 6, 12])
    assert ll.row_labels()[:2] == ["y[a]", "y[b]"]
    assert ll.row_labels()[6] == "z[0, 10]"
    rows = np.array([7, 0, 11, 3])
    got = ll.gather(rows)
    want = np.stack(
        [
            ds["z"].values[:, :, 0, 1].ravel(),
            ds["y"].values[:, :, 0].ravel(),
            ds["z"].values[:, :, 1, 2].ravel(),
            ds["y"].values[:, :, 3].ravel(),
        ]
    )
    np.testing.assert_array_equal(got, want)
    # a contiguous block is a copy, never a view of the user's data
    block = ll.gather(np.arange(2, 4))
    block[:] = 0.0
    assert np.all(ds["y"].values[:, :, 2:4] != 0.0)


def test_loglik_errors(rng):
    ds = loglik_dataset(rng)
    with pytest.raises(KeyError, match="not in the log_likelihood group"):
        LogLikelihood.from_dataset(ds, ["nope"])
    scalar = xr.Dataset({"y": (("chain", "draw"), rng.normal(size=(2, 10)))})
    with pytest.raises(ValueError, match="does not factorise"):
        LogLikelihood.from_dataset(scalar)


def test_log_weights_remove_matches_arviz(rng):
    ds = loglik_dataset(rng)
    ll = LogLikelihood.from_dataset(ds, ["y"])
    nbs = Neighbours.records(ll)
    lw, khat = _weights(ll, nbs, reff=0.8)
    ref = -ds["y"].stack(__sample__=("chain", "draw")).transpose("obs", "__sample__")
    ref_lw, ref_k = stack_psislw(ref.values, reff=0.8)
    np.testing.assert_allclose(lw, ref_lw, rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(khat, ref_k, rtol=1e-9)


def test_log_weights_groups_and_replacement(rng):
    ds = loglik_dataset(rng)
    ll = LogLikelihood.from_dataset(ds, ["y"])
    nbs = Neighbours.from_groups(ll, "person")
    lw, _ = _weights(ll, nbs)
    y = ds["y"].values.reshape(1000, 6)
    ref, _ = stack_psislw(-(y[:, 0::2] + y[:, 1::2]).T)
    np.testing.assert_allclose(lw, ref, rtol=1e-9, atol=1e-9)

    alt = rng.normal(-1, 0.3, (1000, 6))
    lw_r, _ = _weights(ll, Neighbours.records(ll), replacement=[alt])
    ref_r, _ = stack_psislw((alt - y).T)
    np.testing.assert_allclose(lw_r, ref_r, rtol=1e-9, atol=1e-9)


def test_log_ratios_constant_up_to_rounding_are_not_smoothed(rng):
    """A record the parameters do not depend on: its log ratios differ by one ulp at most.

    A Pareto tail fitted to that rounding gives k-hat inf (sending the record to refits) or
    NaN weights (an epsilon of -1, issue 39's interior random-walk records); such rows are
    weighted as they are, within e^(+-1.5e-8) of uniform, with k-hat -inf. A row that varies
    by more is smoothed as before.
    """
    c = 0.6097605600134279
    rows = np.full((4, 1000), c)
    for r, step in enumerate((5, 8, 10, 12)):
        rows[r, ::step] = np.nextafter(c, 1.0)  # one ulp above, on every step-th draw
    varied = c + 1e-3 * rng.standard_normal(1000)
    log_ratio = np.vstack([rows, varied])
    ref_lw, ref_k = stack_psislw(varied[None], reff=0.45)
    raw_lw, raw_k = psislw(rows.copy(), 0.45, tail_rule=PSIS_TAIL_RULE)  # what it avoids
    assert np.isinf(raw_k[0]) and np.isnan(raw_lw[2]).all()
    lw, khat = smoothed_log_weights(log_ratio.copy(), 0.45)
    assert np.isneginf(khat[:4]).all()
    np.testing.assert_allclose(lw[:4], -np.log(1000), rtol=0, atol=1e-14)
    np.testing.assert_allclose(lw[4], ref_lw[0], rtol=1e-9, atol=1e-9)
    assert khat[4] == pytest.approx(ref_k[0], rel=1e-9)
    # the bound of a flat row (its spread) is within the resolution: nothing is hidden
    assert np.ptp(rows, axis=1).max() <= LOG_RATIO_RESOLUTION < np.ptp(varied)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_non_finite_loglik_is_an_error(rng, bad):
    ds = loglik_dataset(rng)
    ds["y"][0, 5, 2] = bad
    ll = LogLikelihood.from_dataset(ds, ["y"])
    with pytest.raises(ValueError, match=r"first at record y\[c\], draw 5"):
        _weights(ll, Neighbours.records(ll))


def test_relative_efficiency(rng):
    iid = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(4, 1000)))})
    # independent draws: ESS ~ S, so r_eff ~ 1 (ESS is estimated: +-10%)
    assert relative_efficiency(iid) == pytest.approx(1.0, abs=0.1)
    ar = np.cumsum(rng.normal(size=(4, 1000)), axis=1) * 0.1 + rng.normal(size=(4, 1000))
    sticky = xr.Dataset({"mu": (("chain", "draw"), ar)})
    assert relative_efficiency(sticky) < 0.5
    one_chain = xr.Dataset({"mu": (("chain", "draw"), rng.normal(size=(1, 100)))})
    assert relative_efficiency(one_chain) == 1.0


def test_float32_kept_and_dask_read_lazily(rng):
    """float32 values are not upcast whole; a dask-backed group stays lazy; both gather
    the same float64 chunks as the in-memory float64 group."""
    ds = loglik_dataset(rng).astype(np.float32)
    ll32 = LogLikelihood.from_dataset(ds)
    assert all(a.dtype == np.float32 for a in ll32.arrays) and not ll32.lazy
    ll64 = LogLikelihood.from_dataset(ds.astype(np.float64))
    rows = np.array([1, 4, 7, 11])
    np.testing.assert_array_equal(ll32.gather(rows), ll64.gather(rows))
    assert ll32.gather(np.arange(2, 5)).dtype == np.float64
    pytest.importorskip("dask")
    lazy = LogLikelihood.from_dataset(ds.chunk({"obs": 2}))
    assert lazy.lazy
    np.testing.assert_array_equal(lazy.gather(rows), ll64.gather(rows))
    np.testing.assert_array_equal(lazy.gather(np.arange(0, 6)), ll64.gather(np.arange(0, 6)))
