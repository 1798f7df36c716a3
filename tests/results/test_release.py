"""ReleaseResult: its numbers from its atoms, and the netCDF round trip."""

import numpy as np
import pytest

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools

# five releases of eight schools' draws at small deltas rest on few draws: flagged, not tested here
pytestmark = pytest.mark.filterwarnings("ignore::pymc_edp.EDPWarning")


@pytest.fixture(scope="module")
def res():
    return edp.audit_release(
        load_eight_schools(),
        release="draws",
        k=3,
        delta=1e-3,
        progressbar=False,
        options={"bootstrap": 10},
        random_seed=0,
    )


def test_epsilon_and_delta_invert_each_other(res):
    eps = res.epsilon(1e-4)
    assert res.delta(eps) == pytest.approx(1e-4, rel=1e-6)
    assert res.epsilon(1e-4, k=6) > eps


def test_round_trip(tmp_path, res):
    path = tmp_path / "r.nc"
    res.to_netcdf(path)
    back = edp.ReleaseResult.from_netcdf(path)
    assert back.headline == res.headline
    assert back.curves.equals(res.curves)
    assert back.refined.equals(res.refined)
    assert back.comparison.equals(res.comparison)
    assert back.epsilon(1e-2) == res.epsilon(1e-2)
    assert back.n_neighbours == 8
    assert np.isfinite(back.interval).all()
