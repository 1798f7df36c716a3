"""Fast streamed log-likelihoods of GLM families (pymc_edp.model.families).

For each recognised family and link, a small PyMC model's streamed columns (fast path) are
checked against ``pm.compute_log_likelihood`` to 1e-12, their replacement columns
(``with_observed``) and ranges (``range_of``) against PyTensor's own graph on the same
columns; unrecognised likelihoods, out-of-support data and invalid parameters behave
exactly as without the fast path. Draws are random (no sampling); each model is compiled
once per module.
"""

import logging
import pickle

import cloudpickle
import numpy as np
import pymc as pm
import pytest
from support import take_columns

from pymc_edp.base import glm
from pymc_edp.model import families
from pymc_edp.model.compat import compute_log_likelihood, from_dict
from pymc_edp.model.stream import ModelColumns, model_log_likelihood

N_CHAINS, N_DRAWS = 2, 60
S = N_CHAINS * N_DRAWS
N = 80
RTOL = ATOL = 1e-12
_DATA = np.random.default_rng(11)


def _design(extreme: float = 0.0):
    """Intercept + 2 covariates; the first records' covariate is ``extreme`` (large eta)."""
    X = np.column_stack([np.ones(N), _DATA.normal(size=(N, 2))])
    X[:3, 1] = extreme
    return X


def _draws(*shape, loc=0.0, sd=1.0):
    return _DATA.normal(loc, sd, (N_CHAINS, N_DRAWS, *shape))


def _normal():
    X = _design()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 2)
        pm.Normal("y", pm.math.dot(X, beta), sigma, observed=_DATA.normal(size=N))
    post = {"beta": _draws(3), "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}
    return model, post, lambda y: y + 0.7


def _student_t(free_nu: bool):
    def build():
        X = _design()
        with pm.Model() as model:
            beta = pm.Normal("beta", 0, 1, shape=3)
            sigma = pm.HalfNormal("sigma", 2)
            nu = pm.Gamma("nu", 2, 0.1) if free_nu else 4.0
            y = _DATA.normal(size=N)
            pm.StudentT("y", nu=nu, mu=pm.math.dot(X, beta), sigma=sigma, observed=y)
        post = {"beta": _draws(3), "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}
        if free_nu:
            post["nu"] = _DATA.uniform(1, 40, (N_CHAINS, N_DRAWS))
        return model, post, lambda y: -y

    return build


def _bernoulli(spelling: str):
    def build():
        X = _design(extreme=20.0 if spelling != "probit" else 3.0)  # |eta| up to ~40 / ~6
        y = _DATA.integers(0, 2, N)
        with pm.Model() as model:
            beta = pm.Normal("beta", 0, 1, shape=3)
            eta = pm.math.dot(X, beta)
            if spelling == "logit_p":
                pm.Bernoulli("y", logit_p=eta, observed=y)
            elif spelling == "invlogit":
                pm.Bernoulli("y", p=pm.math.invlogit(eta), observed=y)
            else:
                pm.Bernoulli("y", p=pm.math.invprobit(eta), observed=y)
        return model, {"beta": _draws(3, loc=0.3, sd=0.8)}, lambda v: 1 - v

    return build


def _binomial(link: str):
    def build():
        X = _design(extreme=20.0 if link == "logit" else 2.0)
        n = _DATA.integers(1, 25, N)
        y = _DATA.binomial(n, 0.4)
        with pm.Model() as model:
            nd = pm.Data("n", n)
            beta = pm.Normal("beta", 0, 1, shape=3)
            eta = pm.math.dot(X, beta)
            if link == "logit":
                pm.Binomial("y", n=nd, logit_p=eta, observed=y)
            else:
                pm.Binomial("y", n=nd, p=pm.math.invprobit(eta), observed=y)
        return model, {"beta": _draws(3, sd=0.5)}, lambda v: n - v

    return build


def _poisson_log():
    X = _design(extreme=4.0)
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=3)
        pm.Poisson("y", mu=pm.math.exp(pm.math.dot(X, b)), observed=_DATA.poisson(2, N))
    return model, {"b": _draws(3, loc=0.2, sd=0.3)}, lambda y: y + 1


def _poisson_plain():
    with pm.Model() as model:
        mu = pm.Gamma("mu", 2, 1)
        pm.Poisson("y", mu=mu, observed=_DATA.poisson(2, N))
    return model, {"mu": _DATA.uniform(0.5, 4, (N_CHAINS, N_DRAWS))}, lambda y: y + 2


def _negative_binomial():
    X = _design()
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1, shape=3)
        alpha = pm.Gamma("alpha", 2, 1)
        pm.NegativeBinomial(
            "y", mu=pm.math.exp(pm.math.dot(X, b)), alpha=alpha, observed=_DATA.poisson(3, N)
        )
    post = {"b": _draws(3, loc=0.3, sd=0.3), "alpha": _DATA.uniform(0.5, 10, (N_CHAINS, N_DRAWS))}
    return model, post, lambda y: y + 3


MODELS = {
    "normal": _normal,
    "student_t_free_nu": _student_t(True),
    "student_t_fixed_nu": _student_t(False),
    "bernoulli_logit_p": _bernoulli("logit_p"),
    "bernoulli_invlogit": _bernoulli("invlogit"),
    "bernoulli_probit": _bernoulli("probit"),
    "binomial_logit": _binomial("logit"),
    "binomial_probit": _binomial("probit"),
    "poisson_log": _poisson_log,
    "poisson_plain": _poisson_plain,
    "negative_binomial": _negative_binomial,
}


def _pytensor_only(cols: ModelColumns) -> ModelColumns:
    """The same columns computed by PyTensor's graph (sharing the compiled function)."""
    out = object.__new__(type(cols))
    out.__dict__.update(cols.__dict__)
    out._fast = None
    return out


@pytest.fixture(scope="module", params=list(MODELS))
def case(request):
    """(columns, PyMC's (S, n) reference, replacement observed values) per model."""
    model, post, replace = MODELS[request.param]()
    idata = from_dict({"posterior": post})
    cols = model_log_likelihood(model, idata).arrays[0]
    want = np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(S, -1)
    return cols, want, replace(np.asarray(cols._data[0]))


def test_fast_columns_equal_pymc(case):
    cols, want, _ = case
    assert cols._fast is not None
    np.testing.assert_allclose(cols[:, :], want, rtol=RTOL, atol=ATOL)
    idx = np.array([5, 0, N - 1, 17, 5])
    np.testing.assert_allclose(cols[3:40:2, idx], want[3:40:2][:, idx], rtol=RTOL, atol=ATOL)


def test_replacement_columns_equal_pytensors(case):
    cols, _, alt = case
    fast = cols.with_observed(alt)
    assert fast._fast is cols._fast
    slow = _pytensor_only(cols).with_observed(alt)
    np.testing.assert_allclose(fast[:, :], slow[:, :], rtol=RTOL, atol=ATOL)


def _check_range(got, block):
    want = block.max(axis=0) - block.min(axis=0)
    scale = 1.0 + np.abs(block).max(axis=0)
    assert np.all(got >= want - 1e-12 * scale)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * scale.max())


def test_ranges_bound_the_computed_ranges(case):
    cols, _, alt = case
    slow = _pytensor_only(cols)
    cols_block = slow[:, :]
    _check_range(cols.range_of(slice(None)), cols_block)
    other = cols.with_observed(alt)
    diff = slow.with_observed(alt)[:, :] - cols_block
    _check_range(cols.range_of(slice(None), other), diff)
    idx = np.array([7, 2, 2, N - 1])
    _check_range(cols.range_of(idx, other), diff[:, idx])
    assert cols.range_of(np.array([], dtype=int)).shape == (0,)


def test_pickle_round_trip_keeps_the_fast_path(case):
    cols, want, alt = case
    for dumps, loads in ((pickle.dumps, pickle.loads), (cloudpickle.dumps, cloudpickle.loads)):
        back = loads(dumps(cols))
        assert back._fast is not None and back._fast._fn.fn is None
        np.testing.assert_allclose(back[:, 10:30], want[:, 10:30], rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(
            back.range_of(slice(0, 20), back.with_observed(alt)),
            cols.range_of(slice(0, 20), cols.with_observed(alt)),
            rtol=1e-14,
        )


def test_take_and_at_draws_keep_the_fast_path(case):
    cols, want, _ = case
    part = take_columns(cols, np.arange(10, 30))
    assert part._fast is cols._fast
    np.testing.assert_allclose(part[:, :], want[:, 10:30], rtol=RTOL, atol=ATOL)
    sub = cols.at_draws([d[5:15] for d in cols._draws])
    np.testing.assert_allclose(sub[:, :], want[5:15], rtol=RTOL, atol=ATOL)


# ------------------------------------------------------------------------------- fallbacks
def test_fast_false_uses_pytensor_only():
    model, post, _ = _normal()
    cols = model_log_likelihood(model, from_dict({"posterior": post}), fast=False).arrays[0]
    assert cols._fast is None


def _unrecognised():
    with pm.Model() as gamma_model:
        mu = pm.HalfNormal("mu", 1)
        pm.Gamma("y", mu=mu, sigma=1.0, observed=_DATA.uniform(0.5, 2, N))
    p = _DATA.uniform(0.1, 0.9, N)
    with pm.Model() as constant_p:  # p is data: nothing depends on the draws
        pm.Normal("m", 0, 1)
        pm.Bernoulli("y", p=p, observed=_DATA.integers(0, 2, N))
    with pm.Model() as normal_in_loc:  # recognised family, free parameter in a per-draw mu
        m = pm.Normal("m", 0, 1)
        pm.Normal("y", m, 1.0, observed=_DATA.normal(size=N))
    return {
        "gamma": (gamma_model, {"mu": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}, False),
        "constant_p": (constant_p, {"m": _draws()}, False),
        "normal_scalar_mu": (normal_in_loc, {"m": _draws()}, True),
    }


@pytest.mark.parametrize("name", ["gamma", "constant_p", "normal_scalar_mu"])
def test_other_likelihoods_fall_back_or_match(name):
    model, post, recognised = _unrecognised()[name]
    idata = from_dict({"posterior": post})
    cols = model_log_likelihood(model, idata).arrays[0]
    assert (cols._fast is not None) == recognised
    want = np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(S, -1)
    np.testing.assert_allclose(cols[:, :], want, rtol=RTOL, atol=ATOL)
    _check_range(cols.range_of(slice(None)), want)


def test_out_of_support_observations_fall_back_per_chunk():
    y = _DATA.poisson(2, N)
    y[50] = -1  # log p = -inf there
    with pm.Model() as model:
        b = pm.Normal("b", 0, 1)
        pm.Poisson("y", mu=pm.math.exp(b), observed=y)
    idata = from_dict({"posterior": {"b": _draws()}})
    cols = model_log_likelihood(model, idata).arrays[0]
    slow = _pytensor_only(cols)
    assert cols._fast is not None
    np.testing.assert_array_equal(cols[:, 40:60], slow[:, 40:60])
    assert np.isneginf(cols[:, 50]).all()
    with np.errstate(invalid="ignore"):  # -inf - -inf in the generic range
        np.testing.assert_array_equal(cols.range_of(slice(40, 60)), slow.range_of(slice(40, 60)))
    np.testing.assert_allclose(cols[:, :40], slow[:, :40], rtol=RTOL, atol=ATOL)


def test_invalid_parameters_give_what_pytensor_gives():
    """sigma <= 0 at one draw: the kernels leave the chunk to PyTensor (PyMC's -inf)."""
    model, post, _ = _normal()
    post = dict(post)
    post["sigma"] = post["sigma"].copy()
    post["sigma"][1, 7] = -1.0
    idata = from_dict({"posterior": post})
    cols = model_log_likelihood(model, idata, check=False).arrays[0]
    assert cols._fast is not None
    slow = _pytensor_only(cols)
    got = cols[:, :5]
    np.testing.assert_array_equal(got, slow[:, :5])
    assert np.isneginf(got).all()  # PyMC's parameter check covers the whole call
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(cols.range_of(slice(0, 5)), slow.range_of(slice(0, 5)))


def test_a_mismatch_drops_the_fast_path(monkeypatch, caplog):
    """If the kernels disagree with PyTensor at the checked draws, PyTensor is used."""
    model, post, _ = _poisson_log()
    real = families.glm.logp

    def off_by_a_bit(*args, **kwargs):
        out = real(*args, **kwargs)
        return None if out is None else out + 1e-9

    monkeypatch.setattr(families.glm, "logp", off_by_a_bit)
    idata = from_dict({"posterior": post})
    with caplog.at_level(logging.INFO, logger="pymc_edp"):
        cols = model_log_likelihood(model, idata).arrays[0]
    assert cols._fast is None
    assert "not used" in caplog.text
    want = np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(S, -1)
    np.testing.assert_allclose(cols[:, :], want, rtol=RTOL, atol=ATOL)


def test_float32_columns_keep_the_generic_range():
    model, post, _ = _negative_binomial()
    cols = model_log_likelihood(model, from_dict({"posterior": post}), dtype=np.float32)
    cols = cols.arrays[0]
    block = cols[:, :]
    assert block.dtype == np.float32
    np.testing.assert_array_equal(
        cols.range_of(slice(None)),
        block.max(axis=0).astype(np.float64) - block.min(axis=0).astype(np.float64),
    )


def test_recognise_never_raises():
    class Broken:
        vectorised = True
        rv_new = None

        def __init__(self):
            self.values = [object()]

    assert families.recognise(Broken()) is None


# ----------------------------------------------------- checked on every chunk (issue 32)
def _want(model, idata) -> np.ndarray:
    return np.asarray(compute_log_likelihood(idata, model)["y"].values).reshape(S, -1)


def _hand_written_logit():
    """Bernoulli with ``p = exp(eta) / (1 + exp(eta))``: not PyMC's logit, taken as ``p``.

    PyTensor rewrites it to ``sigmoid`` and ``log(sigmoid)`` to a softplus; the kernels
    compute ``log1p(-p)`` from ``p`` rounded near 1, off by ~1e-6 at ``|eta|`` ~ 20. The
    draws put ``|eta|`` there only away from the draws the build-time check reads (first,
    middle, last).
    """
    x = np.column_stack([np.ones(N), _DATA.uniform(0.5, 1.5, N)])
    y = _DATA.integers(0, 2, N)
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=2)
        eta = pm.math.dot(x, beta)
        pm.Bernoulli("y", p=pm.math.exp(eta) / (1 + pm.math.exp(eta)), observed=y)
    b = _draws(2, sd=0.5)
    b[0, 11] = [0.0, 18.0]  # eta in (9, 27): y = 0 loses precision
    b[1, 23] = [0.0, -18.0]  # y = 1
    return model, from_dict({"posterior": {"beta": b}})


@pytest.fixture(scope="module")
def hand_written():
    model, idata = _hand_written_logit()
    cols = model_log_likelihood(model, idata).arrays[0]
    return cols, _want(model, idata)


def test_a_hand_written_link_is_checked_on_every_chunk(hand_written):
    """Wherever the kernels differ from PyTensor, the chunk is PyTensor's, in any chunking."""
    cols, want = hand_written
    assert cols._fast is not None  # the three draws checked when built agree
    slow = _pytensor_only(cols)
    assert np.abs(cols._fast.compute(list(cols._draws), list(cols._data)) - want).max() > 1e-9
    for size in (1, 7, N):
        got = np.concatenate([cols[:, lo : lo + size] for lo in range(0, N, size)], axis=1)
        np.testing.assert_allclose(got, want, rtol=RTOL, atol=ATOL)
        np.testing.assert_allclose(cols[:, ::3], want[:, ::3], rtol=RTOL, atol=ATOL)
    alt = cols._data[0] ^ 1  # the flipped outcomes
    for size in (1, 7, N):
        for lo in range(0, N, size):
            part = slice(lo, lo + size)
            np.testing.assert_allclose(
                cols.with_observed(alt)[:, part],
                slow.with_observed(alt)[:, part],
                rtol=RTOL,
                atol=ATOL,
            )
            diff = slow.with_observed(alt)[:, part] - slow[:, part]
            _check_range(cols.range_of(part, cols.with_observed(alt)), diff)
            _check_range(cols.range_of(part), slow[:, part])


def test_a_disagreement_is_logged_once(caplog):
    model, idata = _hand_written_logit()
    cols = model_log_likelihood(model, idata).arrays[0]
    with caplog.at_level(logging.INFO, logger="pymc_edp"):
        cols[:, :5], cols[:, 5:], take_columns(cols, np.arange(9)).range_of(slice(None))
    lines = [r for r in caplog.records if "differs from PyTensor" in r.getMessage()]
    assert len(lines) == 1 and lines[0].levelno == logging.INFO


# synthetic draws, few of them: reliability warnings, not what is tested here
@pytest.mark.filterwarnings("ignore::pymc_edp.base.common.EDPWarning")
def test_the_audit_equals_the_pytensor_only_audit_in_any_chunking(monkeypatch):
    """Per record, replacing each outcome by its flip (both observed values checked)."""
    import pymc_edp as edp

    model, idata = _hand_written_logit()
    kw = dict(bins=5, method="psis", progressbar=False, neighbour="replace")

    def epsilons(memory):
        chunks = {"prune": False, "memory": memory}
        res = edp.audit(idata, model, chunks=chunks, log_likelihood="model", **kw)
        return res.pointwise["epsilon"].values

    one, small = epsilons("1GiB"), epsilons("40KiB")  # one chunk; chunks of 5 records
    monkeypatch.setattr(families, "recognise", lambda graph: None)
    want = epsilons("1GiB")
    np.testing.assert_allclose(one, want, rtol=1e-9, atol=1e-12)
    np.testing.assert_allclose(small, want, rtol=1e-9, atol=1e-12)


def _student_t_with(nu_spelling: str):
    x = _design()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 2)
        nu = pm.Gamma("nu", 2, 1e-7) if nu_spelling == "free" else nu_spelling
        pm.StudentT(
            "y", nu=nu, mu=pm.math.dot(x, beta), sigma=sigma, observed=_DATA.normal(size=N)
        )
    post = {"beta": _draws(3), "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}
    if nu_spelling == "free":
        post["nu"] = _DATA.uniform(1e6, 1e8, (N_CHAINS, N_DRAWS))
    return model, from_dict({"posterior": post})


@pytest.mark.parametrize("nu", [3, 10_000_000.3, "free"], ids=["int", "1e7", "free_1e7"])
def test_student_t_nu_int_or_large_is_pymcs(nu):
    """``nu=3`` (an int8 constant) and ``nu`` near 1e7 used to fail the layout check."""
    model, idata = _student_t_with(nu)
    cols = model_log_likelihood(model, idata).arrays[0]
    np.testing.assert_allclose(cols[:, :], _want(model, idata), rtol=RTOL, atol=ATOL)


def test_truncated_with_one_bound_is_pymcs():
    """PyMC's graph folds the infinite bound; the resized one must too (same formula)."""
    x = _design()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        sigma = pm.HalfNormal("sigma", 1)
        dist = pm.Normal.dist(mu=pm.math.dot(x, beta), sigma=sigma)
        pm.Truncated("y", dist, lower=2.0, observed=_DATA.uniform(2, 3, N))
    post = {"beta": _draws(3), "sigma": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}
    idata = from_dict({"posterior": post})
    cols = model_log_likelihood(model, idata).arrays[0]
    np.testing.assert_allclose(cols[:, :], _want(model, idata), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("prune", [False, True])
def test_a_count_replacement_beyond_float64_is_refused_streamed_as_in_memory(prune):
    """``2**63 - 1`` overflows PyTensor's ``y + 1``: -inf, outside the support either way."""
    import pymc_edp as edp

    model, post, _ = _poisson_log()
    idata = from_dict({"posterior": post})
    observed = {"y": np.asarray(model.rvs_to_values[model["y"]].data)}
    stored = from_dict(
        {
            "posterior": post,
            "log_likelihood": {"y": _want(model, idata).reshape(N_CHAINS, N_DRAWS, N)},
            "observed_data": observed,
        }
    )
    neighbour = edp.Replace([2, 2**63 - 1])
    kw = dict(bins=5, method="psis", progressbar=False, neighbour=neighbour)
    with pytest.raises(ValueError, match="outside the support") as held:
        edp.audit(stored, model, **kw)
    assert "9223372036854775807" in str(held.value)
    with pytest.raises(ValueError, match="outside the support"):
        edp.audit(idata, model, log_likelihood="model", chunks={"prune": prune}, **kw)


# --------------------------------------------------- a family is one entry (issue 34)
def _laplace(y, out, params, **_):
    """PyMC's Laplace log-density, ``-log(2 b) - |y - mu| / b``."""
    mu, b = params
    if not np.all(b > 0):
        return None
    out[...] = -np.log(2.0 * b) - np.abs(y - mu) / b
    return out if np.isfinite(out).all() else None


LAPLACE = glm.Family("laplace", "LaplaceRV", ("mu", "b"), _laplace)


def test_a_family_registered_in_one_entry_is_used_and_exact(monkeypatch):
    """docs/large_data.md, "Adding a family": the entry above, and nothing else."""
    monkeypatch.setitem(glm.FAMILIES, LAPLACE.name, LAPLACE)
    x = _design()
    with pm.Model() as model:
        beta = pm.Normal("beta", 0, 1, shape=3)
        b = pm.HalfNormal("b", 2)
        pm.Laplace("y", mu=pm.math.dot(x, beta), b=b, observed=_DATA.laplace(size=N))
    post = {"beta": _draws(3), "b": _DATA.uniform(0.5, 2, (N_CHAINS, N_DRAWS))}
    idata = from_dict({"posterior": post})
    cols = model_log_likelihood(model, idata).arrays[0]
    assert cols._fast is not None and cols._fast.family == "laplace"
    want = _want(model, idata)
    np.testing.assert_allclose(cols[:, :], want, rtol=RTOL, atol=ATOL)
    alt = np.asarray(cols._data[0]) + 1.0
    slow = _pytensor_only(cols)
    diff = slow.with_observed(alt)[:, :] - slow[:, :]
    _check_range(cols.range_of(slice(None), cols.with_observed(alt)), diff)
