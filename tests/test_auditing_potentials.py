"""Audits of likelihoods written in a ``pm.Potential`` (issue 39).

pymc-marketing's Gamma-Gamma spend model puts one term per customer in
``pm.Potential("likelihood", ...)`` of shape (n,); the gallery's Weibull survival model puts
the censored records' log survival in ``pm.Potential("y_cens", ...)``. The exact reference
is the same model written as the audit reads it: the Potential replaced by an observed
``pm.CustomDist`` whose log-density is the Potential's expression on the records' data.
Both have the same joint density, so given the same posterior draws their audits must agree
record for record (up to floating-point rounding of the log-likelihood).
"""

import warnings

import numpy as np
import pymc as pm
import pytensor.tensor as pt
import pytest
import zoo
import zoo_libraries

import pymc_edp as edp

BINS = 10


def _audit(idata, model, **kwargs):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", edp.EDPWarning)  # k-hat notes: asserted below
        return edp.audit(idata, model, bins=BINS, random_seed=1, progressbar=False, **kwargs)


def _gamma_gamma_logp(value, p, q, v):
    """pymc-marketing's Gamma-Gamma term of each customer, ``value`` rows (x, z_mean)."""
    x, z_mean = value[:, 0], value[:, 1]
    return (
        pt.gammaln(p * x + q)
        - pt.gammaln(p * x)
        - pt.gammaln(q)
        + q * pt.log(v)
        + (p * x - 1) * pt.log(z_mean)
        + (p * x) * pt.log(x)
        - (p * x + q) * pt.log(x * z_mean + v)
    )


def _gamma_gamma_custom_dist() -> pm.Model:
    """The Gamma-Gamma model with its likelihood as an observed CustomDist."""
    x, z_mean = zoo_libraries._spend()
    with pm.Model(coords={"customer_id": np.arange(len(x))}) as model:
        p = pm.Weibull("p", alpha=2.0, beta=1.0)
        q = pm.Weibull("q", alpha=2.0, beta=1.0)
        v = pm.Weibull("v", alpha=2.0, beta=10.0)
        pm.CustomDist(
            "likelihood",
            p,
            q,
            v,
            logp=_gamma_gamma_logp,
            signature="(),(),()->(2)",
            observed=np.column_stack([x, z_mean]),
        )
    return model


def _same_audits(res, reference):
    a, b = (r.pointwise["epsilon"].to_series() for r in (res, reference))
    a.index, b.index = a.index.astype(str), b.index.astype(str)
    assert sorted(a.index) == sorted(b.index)
    np.testing.assert_allclose(a[b.index].values, b.values, rtol=1e-9, atol=1e-12)
    assert res.epsilon == pytest.approx(reference.epsilon, rel=1e-9)
    assert str(res.worst_neighbour) == str(reference.worst_neighbour)


@pytest.fixture(scope="module")
def gamma_gamma():
    model = zoo_libraries.gamma_gamma_model()
    with model:
        idata = pm.sample(300, tune=300, chains=2, random_seed=zoo.SEED, progressbar=False)
    return model, idata


def test_gamma_gamma_is_audited_as_its_customdist(gamma_gamma):
    model, idata = gamma_gamma
    assert "log_likelihood" not in idata
    res = _audit(idata, model, method="psis")
    reference = _audit(idata, _gamma_gamma_custom_dist(), method="psis")
    _same_audits(res, reference)
    assert str(res.worst_neighbour) == str(zoo_libraries.OUTLIER["gamma_gamma_potential"])
    (line,) = res.records
    assert line.startswith("Potential 'likelihood': 60 records (its elements)")
    assert "row i of 2 constant arrays only (proven from the graph)" in line


def test_gamma_gamma_refusals_come_before_any_work(gamma_gamma):
    model, idata = gamma_gamma
    with pytest.raises(ValueError, match="cannot replace a record of the Potential 'likelihood'"):
        _audit(idata, model, neighbour=edp.Replace([1.0]))
    with pytest.raises(ValueError, match="records='elements' would split each record"):
        _audit(idata, model, neighbour=edp.Remove(records="elements"))
    x, z_mean = (pt.as_tensor(a) for a in zoo_libraries._spend())
    with pm.Model() as summed:  # the same likelihood summed to one term: no record to audit
        p, q, v = (
            pm.Weibull(n, alpha=2.0, beta=b) for n, b in zip("pqv", (1.0, 1.0, 10.0), strict=True)
        )
        terms = _gamma_gamma_logp(pt.stack([x, z_mean], axis=1), p, q, v)
        pm.Potential("likelihood", terms.sum())
    with pytest.raises(ValueError, match=r"no observed variable.*'likelihood' reads data.*single"):
        _audit(idata, summed)


def _weibull_custom_dist() -> pm.Model:
    """The gallery's Weibull model, the censored records' log survival a CustomDist."""
    y, censored = zoo.follow_up()
    with pm.Model() as model:
        mu = pm.Normal("mu", mu=0, sigma=100)
        alpha_raw = pm.Normal("a0", mu=0, sigma=0.1)
        alpha = pm.Deterministic("alpha", pt.exp(10.0 * alpha_raw))
        beta = pm.Deterministic("beta", pt.exp(mu / alpha))
        pm.Weibull("y_obs", alpha=alpha, beta=beta, observed=y[~censored])
        pm.CustomDist(
            "y_cens",
            alpha,
            beta,
            logp=lambda value, a, b: zoo.weibull_lccdf(value, a, b),
            observed=y[censored],
        )
    return model


@pytest.mark.slow  # about 20 s
def test_weibull_survival_is_audited_as_its_customdist():
    model = zoo.survival_weibull_potential_model()
    idata = zoo.fit(model, log_likelihood=False, target_accept=0.9, init="adapt_diag")
    res = _audit(idata, model, method="psis", var_names=["mu", "a0"])
    reference = _audit(idata, _weibull_custom_dist(), method="psis", var_names=["mu", "a0"])
    _same_audits(res, reference)
    _, censored = zoo.follow_up()
    n_obs, n_cens = int((~censored).sum()), int(censored.sum())
    assert res.pointwise.sizes["neighbour"] == n_obs + n_cens
    assert any(line.startswith(f"Potential 'y_cens': {n_cens} records") for line in res.records)
