"""DP and CDP epsilon of transition matrices (pymc_edp.risk.charest_han)."""

import numpy as np
import pytest
import xarray as xr

from pymc_edp.conjugate import (
    BetaBinomialSynthesizer,
    beta_binomial_synthesizer_matrix,
    beta_binomial_synthesizer_prior,
)
from pymc_edp.risk.charest_han import (
    conditional_dp_distribution,
    conditional_dp_epsilon,
    dp_epsilon,
)


# ---------------------------------------------------------------------------------------
# DP and CDP of transition matrices (Charest & Han 2017, Sec. 3.1)
# ---------------------------------------------------------------------------------------
@pytest.fixture
def table1():
    return beta_binomial_synthesizer_matrix(5, 0.5, 0.5)


def test_table1_dp_epsilon_is_log11(table1):
    assert dp_epsilon(table1) == pytest.approx(np.log(11.0), rel=1e-12)  # closed form
    # The paper's worked ratio P(0 | x=4) / P(0 | x=5) = 0.010742 / 0.000977 = 10.9948 ~ 11.
    t = table1.values
    assert t[4, 0] / t[5, 0] == pytest.approx(11.0, rel=1e-12)


def test_table1_cdp(table1):
    cdp = conditional_dp_epsilon(table1, np.arange(6))
    # Charest & Han: 1.466 for x = 2, 3 and log 11 = 2.398 for x = 0, 1, 4, 5 (3 decimals).
    np.testing.assert_allclose(cdp[[2, 3]], 1.466, atol=5e-4)
    np.testing.assert_allclose(cdp[[0, 1, 4, 5]], 2.398, atol=5e-4)
    np.testing.assert_allclose(cdp[[0, 1, 4, 5]], np.log(11.0), rtol=1e-12)
    assert isinstance(conditional_dp_epsilon(table1, 2), float)
    assert conditional_dp_epsilon(table1, 2) == cdp[2]
    assert conditional_dp_epsilon(table1, np.array([[0, 2], [3, 5]])).shape == (2, 2)


def test_cdp_max_is_dp(rng):
    t = rng.dirichlet(np.ones(4), size=7)
    cdp = conditional_dp_distribution(t)
    assert cdp.dims == ("x",) and cdp.sizes["x"] == 7
    assert float(cdp.max()) == dp_epsilon(t) == cdp.attrs["dp_epsilon"]


def test_dp_epsilon_brute_force_over_events(rng):
    # DP is defined over events S; for a finite output space the single outputs attain it.
    t = rng.dirichlet(np.ones(5), size=4)
    best = 0.0
    for mask in range(1, 2**5):
        s = np.array([(mask >> c) & 1 for c in range(5)], dtype=bool)
        p = t[:, s].sum(axis=1)
        best = max(best, np.max(np.abs(np.diff(np.log(p)))))
    assert dp_epsilon(t) == pytest.approx(best, rel=1e-12)


def test_dp_epsilon_zeros():
    # A zero in one row only: the neighbours are perfectly distinguishable.
    assert dp_epsilon(np.array([[0.5, 0.5], [1.0, 0.0]])) == np.inf
    # A column that is zero in every row carries no information.
    t = np.array([[0.5, 0.0, 0.5], [0.25, 0.0, 0.75]])
    assert dp_epsilon(t) == pytest.approx(np.log(2.0), rel=1e-14)
    assert conditional_dp_epsilon(t, 0) == pytest.approx(np.log(2.0), rel=1e-14)


def test_dp_epsilon_general_pairs():
    t = np.array([[0.5, 0.5], [0.9, 0.1], [0.4, 0.6]])
    assert dp_epsilon(t, pairs=[(0, 2)]) == pytest.approx(np.log(0.5 / 0.4), rel=1e-14)
    assert dp_epsilon(t, pairs=[(0, 1), (1, 2)]) == pytest.approx(dp_epsilon(t), rel=1e-14)
    cdp = conditional_dp_epsilon(t, [0, 2], pairs=[(0, 2)])
    np.testing.assert_allclose(cdp, np.log(0.5 / 0.4), rtol=1e-14)
    with pytest.raises(ValueError, match="no neighbour"):  # row 1 is isolated
        conditional_dp_epsilon(t, 1, pairs=[(0, 2)])


@pytest.mark.parametrize(
    ("t", "match"),
    [
        (np.ones(3), "2-D"),
        (np.ones((1, 3)), "two rows"),
        (np.array([[0.5, -0.5], [0.5, 0.5]]), "non-negative"),
        (np.array([[np.nan, 1.0], [0.5, 0.5]]), "non-negative"),
    ],
)
def test_dp_epsilon_validation(t, match):
    with pytest.raises(ValueError, match=match):
        dp_epsilon(t)


def test_cdp_validation(table1):
    with pytest.raises(ValueError, match="lie in"):
        conditional_dp_epsilon(table1, 6)
    with pytest.raises(ValueError, match="integer"):
        conditional_dp_epsilon(table1, 1.5)


def test_transition_accepts_dataarray_and_ndarray(table1):
    assert isinstance(table1, xr.DataArray)
    assert dp_epsilon(table1) == dp_epsilon(table1.values)


# ---------------------------------------------------------------------------------------
# Charest & Han Figure 1: distribution of CDP epsilon over datasets
# ---------------------------------------------------------------------------------------
def test_figure1_median_cdp_n200_eps5():
    # Reading of Figure 1 (b): the Beta-Binomial synthesizer with n = n_s = 200 calibrated
    # to DP epsilon 5 by a = n / (e^eps - 1) (the calibration of their Table 1; the text's
    # (e^eps - 1) / n would give DP epsilon 5.61, contradicting the figure's statement
    # that the maximum CDP is the DP epsilon), and "all possible datasets" = the 201
    # counts x = 0..200, each counted once (one dot per count in the dotplot).
    prior = beta_binomial_synthesizer_prior(5.0, 200)
    cdp = conditional_dp_distribution(prior.transition_matrix(200, log=True), log=True)
    assert cdp.sizes["x"] == 201
    assert cdp.attrs["dp_epsilon"] == pytest.approx(5.0, rel=1e-9)  # max CDP = DP eps
    # "half of the possible datasets will lead to an estimate smaller than 1.60": we get
    # 1.6038; 0.01 is the precision of a 3-significant-figure reading.
    assert float(cdp.median()) == pytest.approx(1.60, abs=0.01)
    assert float(cdp.mean()) > float(cdp.median())  # skewed to the right
    upside_down = BetaBinomialSynthesizer(np.expm1(5.0) / 200, np.expm1(5.0) / 200, 200)
    assert dp_epsilon(upside_down.transition_matrix(200, log=True), log=True) > 5.6
