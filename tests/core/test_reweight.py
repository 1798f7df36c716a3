"""The chunk reweighter: chunks in any order give the same numbers; the pruning bound holds."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy import stats

from pymc_edp.base import binning
from pymc_edp.core.loglik import LogLikelihood, Neighbours
from pymc_edp.core.neighbours import Remove, Replace
from pymc_edp.core.reweight import ChunkOptions, Reweighter, prune_margin
from pymc_edp.model.compat import from_dict


def _reweighter(ll_values, draws, bins=10, smoothing=0.01, groups=None, replacement=None):
    ds = from_dict({"posterior": {"m": draws[None]}, "log_likelihood": {"y": ll_values[None]}})
    from pymc_edp.model.compat import get_group

    ll = LogLikelihood.from_dataset(get_group(ds, "log_likelihood"))
    nbs = Neighbours.records(ll) if groups is None else Neighbours.from_groups(ll, groups)
    relation = (
        Remove()
        if replacement is None
        else Replace().with_candidates({}, [(r,) for r in replacement])
    )
    return Reweighter(
        ll=ll,
        neighbours=nbs,
        bins=binning.quantile_bins(draws[None], bins),
        smoothing=smoothing,
        reff=1.0,
        relation=relation,
        keep_weights=True,
    )


def _normal_case(rng, n=40, s=800, scale=1.0):
    y = rng.normal(0, 1, n) * scale
    y[0] = 6.0  # one influential record
    m = rng.normal(y.mean(), 1 / np.sqrt(n), s)
    ll = stats.norm.logpdf(y[None, :], m[:, None], 1.0)
    return ll, m


def test_chunks_in_any_order_give_the_same_numbers(rng):
    ll, m = _normal_case(rng)
    rw = _reweighter(ll, m)
    full = rw.estimate(slice(0, 40))
    idx = rng.permutation(40)[:13]
    part = rw.estimate(idx)
    np.testing.assert_array_equal(part.eps, full.eps[idx])
    np.testing.assert_array_equal(part.khat, full.khat[idx])
    np.testing.assert_array_equal(part.log_weights, full.log_weights[idx])
    np.testing.assert_array_equal(rw.bound(idx), full.bound[idx])


@given(
    seed=st.integers(0, 2**32 - 1),
    bins=st.integers(2, 20),
    smoothing=st.sampled_from([0.0, 0.01, 1.0]),
    scale=st.floats(0.1, 5.0),
)
def test_bound_is_never_below_epsilon(seed, bins, smoothing, scale):
    """eps_i <= max log r - min log r, for PSIS-smoothed weights and any smoothing."""
    rng = np.random.default_rng(seed)
    ll, m = _normal_case(rng, n=20, s=400, scale=scale)
    res = _reweighter(ll, m, bins=bins, smoothing=smoothing).estimate(slice(0, 20))
    finite = np.isfinite(res.eps.max(axis=1))
    assert np.all(res.eps.max(axis=1)[finite] <= prune_margin(res.bound[finite]))


def test_bound_of_groups_and_replacements(rng):
    ll, m = _normal_case(rng, n=12)
    groups = np.repeat(np.arange(4), 3)
    rw = _reweighter(ll, m, groups=groups)
    # a group's log ratio is minus the sum of its rows' log-likelihoods
    lr = -ll.reshape(-1, 4, 3).sum(axis=2).T
    np.testing.assert_allclose(rw.bound(slice(0, 4)), np.ptp(lr, axis=1))
    alt = [stats.norm.logpdf(np.full((1, 12), v), m[:, None], 1.0) for v in (-1.0, 3.0)]
    rw = _reweighter(ll, m, replacement=alt)
    res = rw.estimate(slice(0, 12))
    expect = np.fmax(*(np.ptp(a - ll, axis=0) for a in alt))
    np.testing.assert_allclose(res.bound, expect)
    assert np.all(res.eps.max(axis=1) <= prune_margin(res.bound))


def test_chunk_options():
    assert ChunkOptions(memory="1GiB").rows(4000) == 2**30 // (8 * 8 * 4000)
    assert ChunkOptions.coerce({"memory": 2**20}).memory_bytes == 2**20
    with pytest.raises(ValueError, match="not a size"):
        ChunkOptions(memory="lots")
    assert ChunkOptions(executor=4).executor == 4  # a local pool of 4, as in RefitOptions
    assert ChunkOptions(executor=4).n_workers() == 4
    with pytest.raises(TypeError, match="executor"):
        ChunkOptions(executor="4")
    with pytest.raises(ValueError, match="executor=0"):
        ChunkOptions(executor=0)
    with pytest.raises(ValueError, match="prune_above"):
        ChunkOptions(prune_above=-1)


def test_chunk_options_refuse_a_fork_pool_the_kernels_break():
    # a forked worker dies running a kernel once the audit's GNU OpenMP threads ran here
    # (BrokenProcessPool): refused before any work, with the start method that works
    import concurrent.futures as cf
    import multiprocessing

    from pymc_edp.runtime.parallel import _numba_threading_layer

    if _numba_threading_layer() != ("omp", "GNU"):
        pytest.skip("numba's threading layer here is fork-safe")
    fork = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
    spawn = cf.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
    try:
        with pytest.raises(ValueError, match=r"executor=.*fork.*get_context\('forkserver'\)"):
            ChunkOptions(executor=fork)
        assert ChunkOptions(executor=spawn).executor is spawn
    finally:
        fork.shutdown()
        spawn.shutdown()


@pytest.mark.parametrize("reff", [1.0, 0.3])
@pytest.mark.parametrize("n_bins", [2, 5, 20])
def test_mean_bound_is_never_below_the_smoothed_epsilon(rng, reff, n_bins):
    """The second screen of pruning bounds epsilon after PSIS and binning, heavy tails too."""
    from pymc_edp.base import binning
    from pymc_edp.base.psis import PSIS_TAIL_RULE, psis_tail_length
    from pymc_edp.core.loglik import smoothed_log_weights
    from pymc_edp.core.reweight import mean_bound

    s = 2000
    draws = rng.normal(size=(3, s))
    bins = binning.quantile_bins(draws, n_bins)
    scale = np.exp(rng.uniform(np.log(1e-3), np.log(5.0), size=(300, 1)))
    # log ratios correlated with the parameters (what moves bins), Gaussian or heavy-tailed
    lr = scale * (0.7 * draws[0] + 0.3 * rng.standard_t(3, size=(300, s)))
    lr[::7] = scale[::7] * rng.standard_t(1.5, size=(lr[::7].shape[0], s))
    bound = mean_bound(lr, psis_tail_length(s, reff, PSIS_TAIL_RULE))
    lw, _ = smoothed_log_weights(lr.copy(), reff)
    eps = binning.epsilon_estimates(lw, bins).eps.max(axis=1)
    assert np.all(eps <= bound * (1 + 1e-9) + 1e-12)
    assert np.all(bound <= np.ptp(lr, axis=1))
    # and it is much tighter than the range where the posterior moves little
    small = scale[:, 0] < 0.05
    assert np.median(bound[small] / np.ptp(lr[small], axis=1)) < 0.8


def test_mean_bound_of_non_finite_rows_is_infinite():
    from pymc_edp.core.reweight import mean_bound

    lr = np.zeros((3, 50))
    lr[1, 3] = np.nan
    lr[2, 4] = np.inf
    assert np.array_equal(mean_bound(lr, 10), [0.0, np.inf, np.inf])


def test_chunk_options_refuse_a_nan_memory_with_the_option_named():
    with pytest.raises(ValueError, match=r"memory=nan is not a size"):
        ChunkOptions(memory=float("nan"))
