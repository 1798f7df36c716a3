"""Streaming the pointwise log-likelihood from the model (pymc_edp.model.stream).

Every column the streaming path computes is checked against ``pm.compute_log_likelihood``
on the same draws (through ``compat.compute_log_likelihood``, so on either stack), for
contiguous slices, fancy indices and through ``LogLikelihood.gather``. Compiling is the slow
part, so each model's columns are built once per module.
"""

import pickle
import threading
from concurrent.futures import ThreadPoolExecutor

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from support import take_columns

from pymc_edp.core.loglik import LogLikelihood
from pymc_edp.model.compat import compute_log_likelihood, from_dict
from pymc_edp.model.stream import (
    ModelColumns,
    StreamingUnavailableError,
    model_log_likelihood,
    stream_supported,
)

N_CHAINS, N_DRAWS = 2, 4
S = N_CHAINS * N_DRAWS
# log-densities of order 1-10 computed with the same ops, blocked differently: ~1e-15
RTOL, ATOL = 1e-12, 1e-12
_DATA = np.random.default_rng(7)  # module data; per-test randomness comes from `rng`


def _normal_regression():
    n, p = 40, 3
    X = _DATA.normal(size=(n, p))
    y = X @ np.array([0.5, -1.0, 2.0]) + _DATA.normal(size=n)
    with pm.Model(coords={"obs": [f"r{i}" for i in range(n)]}) as model:
        Xd = pm.Data("X", X, dims=("obs", "coef"))
        beta = pm.Normal("beta", 0, 1, shape=p)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", Xd @ beta, sigma, observed=y, dims="obs")
    post = {
        "beta": _DATA.normal(size=(N_CHAINS, N_DRAWS, p)),
        "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS)),
    }
    return model, from_dict({"posterior": post})


def _logistic():
    n, p = 35, 5
    X = _DATA.normal(size=(n, p))
    y = (_DATA.random(n) < 0.4).astype(np.int64)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=p)
        pm.Bernoulli("y", logit_p=X @ beta, observed=y)
    post = {"beta": _DATA.normal(size=(N_CHAINS, N_DRAWS, p))}
    return model, from_dict({"posterior": post})


def _hierarchical():
    n, n_groups = 30, 4
    group = _DATA.integers(0, n_groups, n)
    x = _DATA.normal(size=n)
    y = 1.0 + 0.5 * x + _DATA.normal(size=n)
    with pm.Model() as model:
        xd = pm.Data("x", x)
        mu_a = pm.Normal("mu_a", 0, 1)
        sigma_a = pm.HalfNormal("sigma_a", 1)
        a = pm.Normal("a", mu_a, sigma_a, shape=n_groups)
        b = pm.Normal("b", 0, 1)
        sigma = pm.HalfNormal("sigma", 1)
        pm.Normal("y", a[group] + b * xd, sigma, observed=y)
    post = {
        "mu_a": _DATA.normal(size=(N_CHAINS, N_DRAWS)),
        "sigma_a": _DATA.uniform(0.5, 1.5, (N_CHAINS, N_DRAWS)),
        "a": _DATA.normal(size=(N_CHAINS, N_DRAWS, n_groups)),
        "b": _DATA.normal(size=(N_CHAINS, N_DRAWS)),
        "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS)),
    }
    return model, from_dict({"posterior": post})


def _poisson_exposure():
    n = 25
    exposure = _DATA.uniform(0.5, 5, n)
    x = _DATA.normal(size=n)
    y = _DATA.poisson(exposure * np.exp(0.2 + 0.3 * x))
    with pm.Model() as model:
        log_exposure = pm.Data("log_exposure", np.log(exposure))
        a = pm.Normal("a", 0, 1)
        b = pm.Normal("b", 0, 1)
        pm.Poisson("y", pm.math.exp(a + b * x + log_exposure), observed=y)
    post = {
        "a": _DATA.normal(0.2, 0.1, (N_CHAINS, N_DRAWS)),
        "b": _DATA.normal(0.3, 0.1, (N_CHAINS, N_DRAWS)),
    }
    return model, from_dict({"posterior": post})


MODELS = {
    "normal_regression": _normal_regression,
    "logistic": _logistic,
    "hierarchical": _hierarchical,
    "poisson_exposure": _poisson_exposure,
}


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    """(model, idata, streamed LogLikelihood, PyMC's (S, n) reference) per model."""
    model, idata = MODELS[request.param]()
    ll = model_log_likelihood(model, idata)
    ref = compute_log_likelihood(idata, model)
    want = np.asarray(ref["y"].values).reshape(S, -1)
    return model, idata, ll, ref, want


def test_contiguous_columns_equal_pymc(case):
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    n = want.shape[1]
    assert isinstance(cols, ModelColumns)
    assert cols.shape == (S, n) and cols.ndim == 2 and cols.dtype == np.float64
    for lo, hi in [(0, n), (0, 7), (7, 19), (n - 3, n)]:
        got = cols[:, lo:hi]
        assert isinstance(got, np.ndarray) and got.shape == (S, hi - lo)
        np.testing.assert_allclose(got, want[:, lo:hi], rtol=RTOL, atol=ATOL)


def test_fancy_and_scalar_indices_equal_pymc(case, rng):
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    n = want.shape[1]
    idx = rng.permutation(n)[:9]
    np.testing.assert_allclose(cols[:, idx], want[:, idx], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[:, [3, 3, -1]], want[:, [3, 3, -1]], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[:, 4], want[:, 4], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[:, ::3], want[:, ::3], rtol=RTOL, atol=ATOL)
    mask = rng.random(n) < 0.5
    np.testing.assert_allclose(cols[:, mask], want[:, mask], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[2:5, idx], want[2:5][:, idx], rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[1], want[1], rtol=RTOL, atol=ATOL)
    assert cols[:, 5:5].shape == (S, 0)
    np.testing.assert_allclose(np.asarray(cols), want, rtol=RTOL, atol=ATOL)
    with pytest.raises(IndexError):
        cols[:, n]
    with pytest.raises(IndexError):
        cols[:, np.array([0.5])]


def test_gather_reads_the_streamed_columns(case, rng):
    _, _, ll, _, want = case
    n = want.shape[1]
    assert ll.n_samples == S and ll.n_rows == n
    np.testing.assert_allclose(ll.gather(np.arange(3, 11)), want[:, 3:11].T, rtol=RTOL, atol=ATOL)
    rows = rng.permutation(n)[:6]
    np.testing.assert_allclose(ll.gather(rows), want[:, rows].T, rtol=RTOL, atol=ATOL)


def test_datasets_layout_is_pymcs(case):
    _, _, ll, ref, _ = case
    ds = ll.datasets
    assert list(ds.data_vars) == list(ref.data_vars)
    assert ds["y"].dims == ref["y"].dims
    assert ds["y"].shape == ref["y"].shape
    for dim in ref["y"].dims:
        np.testing.assert_array_equal(ds[dim].values, ref[dim].values)
    assert ds["y"].values.strides == (0, 0, 0)  # no n x S data held
    assert ll.row_labels()[:2] == LogLikelihood.from_dataset(ref).row_labels()[:2]


def test_pickle_round_trip_recompiles(case, rng):
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    idx = rng.permutation(want.shape[1])[:5]
    for dumps, loads in [(pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)]:
        copy = loads(dumps(cols))
        assert copy._fn.fn is None  # compiled again on first use
        assert copy.shape == cols.shape and copy.inputs == cols.inputs
        np.testing.assert_allclose(copy[:, idx], want[:, idx], rtol=RTOL, atol=ATOL)


def test_take_keeps_only_a_chunk_of_the_data(case):
    _, _, ll, _, want = case
    part = take_columns(ll.arrays[0], slice(4, 12))
    assert part.shape == (S, 8)
    assert all(a.shape[0] == 8 for a in part._data)
    copy = pickle.loads(pickle.dumps(part))
    np.testing.assert_allclose(copy[:, 2:5], want[:, 6:9], rtol=RTOL, atol=ATOL)


def test_per_record_inputs_are_found():
    model, idata = _hierarchical()
    (cols,) = model_log_likelihood(model, idata, check=False).arrays
    # the observed values, the group index (an unnamed constant) and x
    assert cols.inputs[0] == "y"
    assert "x" in cols.inputs
    assert any("constant" in label for label in cols.inputs)
    assert len(cols.inputs) == 3


def test_float32_columns(rng):
    model, idata = _normal_regression()
    ll = model_log_likelihood(model, idata, dtype=np.float32)
    want = np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(S, -1)
    cols = ll.arrays[0]
    assert cols.dtype == np.float32
    idx = rng.permutation(want.shape[1])[:7]
    for got, ref in [(cols[:, 2:9], want[:, 2:9]), (cols[:, idx], want[:, idx])]:
        assert got.dtype == np.float32
        np.testing.assert_allclose(got, ref.astype(np.float32), rtol=1e-6)


@pytest.mark.parametrize("fast", [True, False])
def test_a_float32_per_record_sigma_is_pymcs(fast):
    """issue 32: a float32 per-record sigma was off by 6e-8 (one float32 rounding of log).

    PyMC folds ``log(sigma)`` of the constant with NumPy's float32 ``log``; the streamed
    chunks computed it with the compiled backend's. The folded part is now computed once as
    PyMC's folding computes it, so the columns equal PyMC's, in any chunking.
    """
    n = 3000
    sigma = _DATA.uniform(0.5, 2.0, n).astype(np.float32)
    y = _DATA.normal(size=n)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0, 1)
        pm.Normal("y", mu=mu, sigma=sigma, observed=y)
    idata = from_dict({"posterior": {"mu": _DATA.normal(size=(N_CHAINS, 25))}})
    want = np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(-1, n)
    cols = model_log_likelihood(model, idata, fast=fast).arrays[0]
    np.testing.assert_allclose(cols[:, :], want, rtol=RTOL, atol=ATOL)
    np.testing.assert_allclose(cols[:, 17:1500], want[:, 17:1500], rtol=RTOL, atol=ATOL)
    assert any("computed once from the data" in label for label in cols.inputs)


def test_two_observed_variables_end_to_end():
    n1, n2 = 6, 9
    with pm.Model() as model:
        mu = pm.Normal("mu")
        pm.Normal("y1", mu, 1.0, observed=_DATA.normal(size=n1))
        pm.StudentT("y2", nu=4, mu=mu, sigma=2.0, observed=_DATA.normal(size=n2))
    idata = from_dict({"posterior": {"mu": _DATA.normal(size=(N_CHAINS, N_DRAWS))}})
    ll = model_log_likelihood(model, idata)
    ref = compute_log_likelihood(idata, model)
    assert ll.names == ("y1", "y2")
    np.testing.assert_array_equal(ll.offsets, [0, n1, n1 + n2])
    want = np.concatenate([np.asarray(ref[v].values).reshape(S, -1) for v in ("y1", "y2")], axis=1)
    rows = np.array([0, 5, 6, 14, 2])
    np.testing.assert_allclose(ll.gather(rows), want[:, rows].T, rtol=RTOL, atol=ATOL)
    only = model_log_likelihood(model, idata, ["y2"], check=False)
    assert only.names == ("y2",)
    assert stream_supported(model) == {"y1": None, "y2": None}


def test_an_input_of_length_n_that_is_not_per_record_raises():
    # six records and six groups: the group-level covariate u has the records' length
    n = 6
    group = np.array([0, 0, 3, 3, 5, 1])
    u = np.linspace(-2.0, 3.0, n)  # one value per group, not per record
    with pm.Model() as model:
        b = pm.Normal("b")
        pm.Normal("y", b + pm.Data("u", u)[group], 1.0, observed=np.zeros(n))
    idata = from_dict({"posterior": {"b": _DATA.normal(size=(N_CHAINS, N_DRAWS))}})
    assert stream_supported(model) == {"y": None}  # structure alone cannot tell
    with pytest.raises(StreamingUnavailableError, match="not one value per record") as err:
        model_log_likelihood(model, idata)
    assert isinstance(err.value, ValueError)
    assert "n = 6" in str(err.value) and "pm.compute_log_likelihood" in str(err.value)


def test_a_likelihood_that_cannot_be_resized_is_refused():
    x = np.linspace(-2.0, 2.0, 8)
    with pm.Model() as model:
        dist = pm.Normal.dist(pm.Normal("a") * x, pm.HalfNormal("s"))
        pm.Censored("y", dist, lower=-1, upper=1, observed=np.clip(x, -1, 1))
    reason = stream_supported(model)["y"]
    assert reason is not None and "not supported" in reason
    idata = from_dict(
        {"posterior": {"a": np.zeros((N_CHAINS, N_DRAWS)), "s": np.ones((N_CHAINS, N_DRAWS))}}
    )
    with pytest.raises(StreamingUnavailableError, match="pm.compute_log_likelihood"):
        model_log_likelihood(model, idata)


@pytest.mark.parametrize("layout", ["matrix", "mvnormal_single"])
def test_a_likelihood_without_one_term_per_record_raises(layout):
    with pm.Model() as model:
        mu = pm.Normal("mu")
        if layout == "matrix":
            pm.Normal("y", mu, 1.0, observed=np.zeros((5, 2)))
        else:
            pm.MvNormal("y", mu * np.ones(3), np.eye(3), observed=np.zeros(3))
    idata = from_dict({"posterior": {"mu": _DATA.normal(size=(N_CHAINS, N_DRAWS))}})
    reason = stream_supported(model)["y"]
    assert reason is not None and "one term per record" in reason
    with pytest.raises(StreamingUnavailableError, match="not available") as err:
        model_log_likelihood(model, idata)
    assert "pm.compute_log_likelihood" in str(err.value)


def test_errors_for_bad_names_and_posteriors():
    model, idata = _poisson_exposure()
    with pytest.raises(KeyError, match="not an observed variable"):
        stream_supported(model, ["a"])
    with pytest.raises(KeyError, match="not an observed variable"):
        model_log_likelihood(model, idata, ["nope"])
    partial = from_dict({"posterior": {"a": np.zeros((N_CHAINS, N_DRAWS))}})
    with pytest.raises(ValueError, match=r"lacks the model's free variable\(s\) \['b'\]"):
        model_log_likelihood(model, partial)
    with pytest.raises(TypeError, match="floating-point"):
        model_log_likelihood(model, idata, dtype=np.int64, check=False)


def test_copies_share_one_compiled_function_across_a_pickle(case):
    """A worker receiving several replacement columns compiles their function once."""
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    y = cols._data[0]
    flipped = cols.with_observed(y[::-1].copy())
    a, b = pickle.loads(pickle.dumps((cols, flipped)))
    assert a._fn is b._fn and a._fn.fn is None
    np.testing.assert_allclose(a[:, :3], want[:, :3], rtol=RTOL, atol=ATOL)


def test_threads_sharing_columns_each_call_their_own_function(case):
    """Dask workers in one process and thread pools share one ``ModelColumns``.

    A PyTensor function keeps its intermediates in its own storage: two threads calling one
    function at once read each other's (None) intermediates. Each thread gets a copy of the
    compiled function (the race itself is timing-dependent; the copies are what prevent it).
    """
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    n = want.shape[1]
    barrier = threading.Barrier(4)

    def work(k):
        barrier.wait()  # all four threads compute at the same time
        fns = [cols._function()] + ([cols._fast._function()] if cols._fast else [])
        got = [cols._compute(slice(0, S), slice(0, n), fast=k % 2 == 0) for k in range(20)]
        return fns, got

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(work, range(4)))
    for which in zip(*(fns for fns, _ in results), strict=True):
        assert len({id(fn) for fn in which}) == 4
    for _, got in results:
        for g in got:
            np.testing.assert_allclose(g, want, rtol=RTOL, atol=ATOL)


def test_with_observed_and_at_draws(case):
    _, _, ll, _, want = case
    cols = ll.arrays[0]
    same = cols.with_observed(cols._data[0])
    np.testing.assert_allclose(same[:, :], want, rtol=RTOL, atol=ATOL)
    half = cols.at_draws([d[::2] for d in cols._draws])
    np.testing.assert_allclose(half[:, :], want[::2], rtol=RTOL, atol=ATOL)
    with pytest.raises(ValueError, match="shape"):
        cols.with_observed(cols._data[0][:-1])
    # the range of each column, as the pruning pass reads it
    np.testing.assert_allclose(cols.range_of(slice(0, 4)), np.ptp(want[:, :4], axis=0), rtol=RTOL)
