"""Helpers of the audit stages' tests (tests/auditing): small exact posteriors, settings."""

import numpy as np
import pymc as pm
from scipy import stats
from support import OutlierNormal as ON

from pymc_edp.auditing import check_settings
from pymc_edp.model.compat import from_dict


def make_settings(model=None, **kwargs):
    """:class:`~pymc_edp.auditing.settings.Settings` as ``audit(**kwargs)`` checks them."""
    args = dict(
        bins=10,
        method="psis",
        neighbour="remove",
        smoothing=None,
        refit=None,
        chunks=None,
        random_seed=1,
        progressbar=False,
    )
    return check_settings(model, **{**args, **kwargs})


def normal_idata(rng, n=8):
    """A conjugate Normal-mean posterior (exact draws), its log-likelihood and data."""
    y = rng.normal(0.0, 1.0, n)
    mu = rng.normal(y.sum() / (1 + n), 1 / np.sqrt(1 + n), (2, 500))
    return from_dict(
        {
            "posterior": {"mu": mu, "exp_mu": np.exp(mu)},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1.0)},
            "observed_data": {"y": y},
        },
        coords={"obs": [f"r{i}" for i in range(n)]},
        dims={"y": ["obs"]},
    )


def outlier_fit():
    """Issue 14's Normal model with one outlier (PSIS k-hat about 1.1), exact draws."""
    with pm.Model() as model:
        mu = pm.Normal("mu", ON.MU0, ON.SIGMA0)
        pm.Normal("y", mu, ON.SIGMA, observed=ON.Y)
    draws = ON.M1 + ON.S1 * np.random.default_rng(3).normal(size=(4, 1000))
    idata = from_dict(
        {
            "posterior": {"mu": draws},
            "log_likelihood": {"y": stats.norm.logpdf(ON.Y, draws[..., None], ON.SIGMA)},
            "observed_data": {"y": ON.Y},
        }
    )
    return model, idata
