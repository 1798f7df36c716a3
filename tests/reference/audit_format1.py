"""Write ``tests/results/data/audit_format1.nc``: a result saved by pymc_edp 0.8 (format 1).

Format 1 flattened the per-parameter tables over one ``parameter`` dim. Run with 0.8 on the
path (a checkout of the commit before format 2), from the repository's root::

    PYTHONPATH=<checkout of 0.8> python tests/reference/audit_format1.py

``tests/results/test_edp.py::test_a_result_saved_by_0_8_reads_back`` reads it with today's
code and finds every flat row in its place.
"""

import numpy as np
from scipy import stats

import pymc_edp as edp
from pymc_edp.model.compat import from_dict


def format1_data():
    """Two variables, one with dims and a constant element (left out), ten records."""
    rng = np.random.default_rng(20261129)
    y = rng.normal(0, 1, 10)
    mu = rng.normal(y.sum() / 11, 1 / np.sqrt(11), (2, 500))
    theta = mu[..., None] + rng.normal(0, 0.1, (2, 500, 3))
    theta[..., 2] = 1.5  # constant: left out
    return from_dict(
        {
            "posterior": {"mu": mu, "theta": theta},
            "log_likelihood": {"y": stats.norm.logpdf(y, mu[..., None], 1)},
        },
        coords={"patient": [f"p{i}" for i in range(10)], "arm": ["a", "b", "c"]},
        dims={"y": ["patient"], "theta": ["arm"]},
    )


def audit(idata):
    return edp.audit(idata, bins=8, method="psis", random_seed=3, progressbar=False)


if __name__ == "__main__":
    audit(format1_data()).to_netcdf(
        "tests/results/data/audit_format1.nc", include_weights=True, engine="h5netcdf"
    )
