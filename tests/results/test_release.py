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
        options={"n_bootstrap": 10},
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


@pytest.mark.parametrize("k", [2.5, 0, -2, True])
def test_a_number_of_releases_must_be_an_integer_of_one_or_more(res, k):
    # issue 32: k=2.5 silently used 2, k=0 and -2 raised raw arithmetic errors
    with pytest.raises(ValueError, match=r"k \(the number of releases composed\) must be an "):
        res.epsilon(1e-3, k=k)
    with pytest.raises(ValueError, match="must be an integer >= 1"):
        res.delta(1.0, k=k)


@pytest.mark.parametrize("delta", [1.0, 1.5, -0.1, float("nan")])
def test_epsilon_refuses_a_delta_outside_zero_one(res, delta):
    # issue 32: delta = 1 returned 0.0
    with pytest.raises(ValueError, match=r"delta must be"):
        res.epsilon(delta)


@pytest.mark.parametrize("epsilon", [-1.0, float("nan")])
def test_delta_refuses_a_negative_or_nan_epsilon(res, epsilon):
    with pytest.raises(ValueError, match="epsilon must be a number >= 0"):
        res.delta(epsilon)


def test_many_releases_compose_on_a_coarser_grid_not_an_error(res):
    # issue 32: k = 300 raised 'use a coarser interval', which names nothing a user sets;
    # the grid widens as the audit's does, so the bound loosens and stays an upper bound
    eps = res.epsilon(1e-3, k=300)
    assert np.isfinite(eps) and eps > res.headline
    assert res.delta(eps, k=300) <= 1e-3 * (1 + 1e-6)
    assert res.delta(np.inf) >= 0.0
