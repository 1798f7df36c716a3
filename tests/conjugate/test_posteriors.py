"""Exact EDP oracles of pymc_edp.conjugate.posteriors (Charest & Han 2017, Sec. 3)."""

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from pymc_edp.conjugate import (
    beta_binomial_edp,
    beta_binomial_synthesizer_matrix,
    normal_normal_edp,
    normal_normal_posterior,
)

BINS_TABLE2 = [5, 10, 20, 50, 100, 250]

# Charest & Han (2017), Table 2: true EDP-epsilon, n = 5, a = b = 0.5, rows x = 0..5.
TABLE2_PAPER = np.array(
    [
        [4.01, 5.41, 6.81, 8.64, 10.03, 11.87],
        [2.16, 2.49, 2.97, 3.61, 4.08, 4.70],
        [1.61, 1.97, 2.31, 2.74, 3.05, 3.44],
        [1.61, 1.97, 2.31, 2.74, 3.04, 3.44],
        [2.16, 2.49, 2.97, 3.61, 4.08, 4.70],
        [4.01, 5.41, 6.81, 8.64, 10.03, 11.87],
    ]
)

# ---- Reference values printed by tests/reference/make_conjugate_reference.py ----------
# (mpmath, 40 digits: root-found bin edges, tanh-sinh quadrature of the posterior densities)
TABLE2_EXACT = np.array(
    [
        [
            4.00663671724744,
            5.40387918605974,
            6.79287492619888,
            8.62621027422712,
            10.0126122442144,
            11.8452238344687,
        ],
        [
            2.16302133964699,
            2.49094451900907,
            2.96427253669051,
            3.60448599793557,
            4.0790453064269,
            4.6994292883743,
        ],
        [
            1.60632726996727,
            1.96816239544594,
            2.31314756175891,
            2.73868074711211,
            3.0461292029515,
            3.44041759356409,
        ],
        [
            1.60632726996727,
            1.96816239544594,
            2.31314756175891,
            2.73868074711211,
            3.0461292029515,
            3.44041759356409,
        ],
        [
            2.16302133964699,
            2.49094451900907,
            2.96427253669051,
            3.60448599793557,
            4.0790453064269,
            4.6994292883743,
        ],
        [
            4.00663671724744,
            5.40387918605974,
            6.79287492619888,
            8.62621027422712,
            10.0126122442144,
            11.8452238344687,
        ],
    ]
)
REMOVE_B5 = [
    0.217986072817462,
    1.59219006803337,
    0.819989752221947,
    0.819989752221947,
    1.59219006803337,
    0.217986072817462,
]
REMOVE_B50 = [
    0.59448858573791,
    2.76119224860373,
    1.7892536846605,
    1.7892536846605,
    2.76119224860373,
    0.59448858573791,
]
ASYM_REPLACE = 1.38661148298276  # n=12, x=3, a=2, b=0.7, B=20
ASYM_REMOVE = 0.906963886181716
NN_Y = np.array([8.1, 12.7, 9.4, 15.2, 10.3, 6.9, 25.0])  # sigma^2=5, mu0=10, sigma0^2=3
NN_REMOVE = {
    5: [
        0.956220684858038,
        0.211675270198807,
        0.580712376503138,
        0.731787411451372,
        0.419741476797945,
        1.3358505168886,
        4.63099395508832,
    ],
    20: [
        1.28558167051677,
        0.406543536587338,
        0.962416987212583,
        1.10056987207177,
        0.717714850135796,
        1.7421933846617,
        5.91165701204052,
    ],
    100: [
        1.79498855936515,
        0.629454102043801,
        1.35944982052653,
        1.54446803381181,
        1.03548397791532,
        2.16356623910932,
        6.98786243764224,
    ],
}
NN_REPLACE_B20 = [
    1.41506977114417,
    1.41506977114417,
    1.41506977114417,
    1.90378073249894,
    1.41506977114417,
    1.41506977114417,
    7.04396991389173,
]
NN100_REMOVE_B50_MAX = 0.541407974148567
NN100_REMOVE_B50_ARGMAX = 30
# ---------------------------------------------------------------------------------------

# Both computations are exact up to floating point: the reference agrees to ~1e-14 in
# practice. 1e-9 relative leaves room for libm / BLAS differences across platforms while
# still catching any modelling error (which shows up at 1e-3 or more).
REF_RTOL = 1e-9

SIGMA, MU0, SIGMA0 = np.sqrt(5.0), 10.0, np.sqrt(3.0)  # Charest & Han: variances 5 and 3


def nn_y100():
    """The deterministic n = 100 dataset of the reference script."""
    i = np.arange(100)
    return 10.0 + ((37 * i) % 101 - 50) / 10.0


# ---------------------------------------------------------------------------------------
# Beta-Binomial EDP
# ---------------------------------------------------------------------------------------
def test_table2_matches_high_precision_reference():
    got = np.array([beta_binomial_edp(5, x, 0.5, 0.5, BINS_TABLE2) for x in range(6)])
    np.testing.assert_allclose(got, TABLE2_EXACT, rtol=REF_RTOL)


def test_table2_reproduces_paper():
    got = np.array([beta_binomial_edp(5, x, 0.5, 0.5, BINS_TABLE2) for x in range(6)])
    # Paper prints 2 decimals, and its B >= 10 cells sit systematically 0.006-0.025 above
    # the exact values (the mpmath reference agrees with us to 1e-14, see above), most
    # likely its own numerical integration. 0.03 covers the rounding plus that offset.
    np.testing.assert_allclose(got, TABLE2_PAPER, atol=0.03, rtol=0)
    # The B = 5 column, where the paper's integration is easy, matches to its 2 decimals.
    np.testing.assert_allclose(got[:, 0], TABLE2_PAPER[:, 0], atol=0.005, rtol=0)


def test_scalar_and_sequence_bins():
    eps = beta_binomial_edp(5, 1, 0.5, 0.5, 20)
    assert isinstance(eps, float)
    arr = beta_binomial_edp(5, 1, 0.5, 0.5, [20])
    assert isinstance(arr, np.ndarray) and arr.shape == (1,)
    assert arr[0] == eps


def test_remove_vs_replace_x0():
    # DESIGN note: for x = 0, B = 5, removal gives about 0.22 while replacement gives 4.01.
    remove = beta_binomial_edp(5, 0, 0.5, 0.5, 5, neighbour="remove")
    replace = beta_binomial_edp(5, 0, 0.5, 0.5, 5, neighbour="replace")
    assert remove == pytest.approx(0.22, abs=0.005)  # 2-decimal statement
    assert replace == pytest.approx(4.01, abs=0.005)
    np.testing.assert_allclose(
        [beta_binomial_edp(5, x, 0.5, 0.5, 5, neighbour="remove") for x in range(6)],
        REMOVE_B5,
        rtol=REF_RTOL,
    )
    np.testing.assert_allclose(
        [beta_binomial_edp(5, x, 0.5, 0.5, 50, neighbour="remove") for x in range(6)],
        REMOVE_B50,
        rtol=REF_RTOL,
    )


def test_asymmetric_prior_reference():
    assert beta_binomial_edp(12, 3, 2.0, 0.7, 20) == pytest.approx(ASYM_REPLACE, rel=REF_RTOL)
    assert beta_binomial_edp(12, 3, 2.0, 0.7, 20, "remove") == pytest.approx(
        ASYM_REMOVE, rel=REF_RTOL
    )


def test_beta_binomial_mirror_symmetry():
    # Swapping successes and failures together with (alpha, beta) mirrors p -> 1 - p.
    for nbr in ("replace", "remove"):
        a = beta_binomial_edp(9, 2, 1.3, 0.4, [7, 30], nbr)
        b = beta_binomial_edp(9, 7, 0.4, 1.3, [7, 30], nbr)
        np.testing.assert_allclose(a, b, rtol=1e-10)  # same numbers, mirrored evaluation


@pytest.mark.parametrize("neighbour", ["replace", "remove"])
def test_beta_binomial_eps_grows_with_nested_bins(neighbour):
    # With nested bins (B | B') each coarse bin is a union of fine bins, so its ratio lies
    # between the fine bins' ratios: eps(B) <= eps(B'), a theorem, not a tolerance.
    for x in (0, 3, 7):
        eps = beta_binomial_edp(10, x, 0.5, 2.0, [2, 4, 8, 16, 32, 64, 128], neighbour)
        assert np.all(np.diff(eps) >= -1e-12)
    # Along the paper's (non-nested) grid, Table 2 increases too.
    assert np.all(np.diff(TABLE2_EXACT, axis=1) > 0)


def test_beta_binomial_one_bin_is_zero():
    assert beta_binomial_edp(5, 2, 0.5, 0.5, 1) == pytest.approx(0.0, abs=1e-12)


def test_beta_binomial_tail_bin_exact():
    # For x = 0, B = 250 the max sits in the lowest bin, whose probability under D'
    # (x' = 1) is ~3e-8: eps must equal the log-ratio of the two closed-form lower-tail
    # masses, computed here independently with scipy.stats.
    b = 250
    hi = stats.beta.ppf(1 / b, 0.5, 5.5)
    p_nb = stats.beta.cdf(hi, 1.5, 4.5)
    assert p_nb < 1e-7
    ratio = np.log(p_nb) - np.log(stats.beta.cdf(hi, 0.5, 5.5))
    assert beta_binomial_edp(5, 0, 0.5, 0.5, b) == pytest.approx(abs(ratio), rel=1e-8)


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"n": 5, "x": 6}, "0 <= x <= n"),
        ({"n": 0, "x": 0}, "n >= 1"),
        ({"alpha": 0.0}, "alpha"),
        ({"bins": 0}, "bins"),
        ({"bins": 2.5}, "integers"),
        ({"neighbour": "add"}, "neighbour"),
    ],
)
def test_beta_binomial_validation(kwargs, match):
    args = {"n": 5, "x": 1, "alpha": 0.5, "beta": 0.5, "bins": 5} | kwargs
    with pytest.raises(ValueError, match=match):
        beta_binomial_edp(**args)


# ---------------------------------------------------------------------------------------
# Beta-Binomial synthesizer matrix (Charest & Han Table 1)
# ---------------------------------------------------------------------------------------
TABLE1 = np.array(
    [
        [0.715975, 0.188415, 0.066499, 0.022166, 0.005968, 0.000977],
        [0.339146, 0.299247, 0.199498, 0.107422, 0.043945, 0.010742],
        [0.139648, 0.232747, 0.250651, 0.205078, 0.125326, 0.046549],
        [0.046549, 0.125326, 0.205078, 0.250651, 0.232747, 0.139648],
        [0.010742, 0.043945, 0.107422, 0.199498, 0.299247, 0.339146],
        [0.000977, 0.005968, 0.022166, 0.066499, 0.188415, 0.715975],
    ]
)


def test_table1_all_entries_to_six_decimals():
    t = beta_binomial_synthesizer_matrix(5, 0.5, 0.5)
    assert isinstance(t, xr.DataArray)
    assert t.dims == ("x", "x_synthetic") and t.shape == (6, 6)
    # The paper rounds to 6 decimals: the exact value is within half a unit of the last.
    np.testing.assert_allclose(t.values, TABLE1, atol=5e-7, rtol=0)
    assert np.round(t.values, 6).tolist() == TABLE1.tolist()


def test_synthesizer_matrix_is_beta_binomial(rng):
    t = beta_binomial_synthesizer_matrix(7, 1.5, 0.8, n_synthetic=11)
    assert t.shape == (8, 12)
    np.testing.assert_allclose(t.sum("x_synthetic"), 1.0, rtol=1e-12)
    x = np.arange(8)[:, None]
    expected = stats.betabinom.pmf(np.arange(12)[None, :], 11, 1.5 + x, 0.8 + 7 - x)
    np.testing.assert_allclose(t.values, expected, rtol=1e-10)
    # The two-stage mechanism itself: Beta draw then Binomial draw, for row x = 2.
    draws = 200_000
    p = rng.beta(1.5 + 2, 0.8 + 5, size=draws)
    freq = np.bincount(rng.binomial(11, p), minlength=12) / draws
    se = np.sqrt(t.values[2] * (1 - t.values[2]) / draws)
    # 5 binomial standard errors: a false alarm has probability ~1e-5 per cell.
    assert np.all(np.abs(freq - t.values[2]) <= 5 * se + 1e-12)


# ---------------------------------------------------------------------------------------
# Normal-Normal
# ---------------------------------------------------------------------------------------
def test_normal_normal_posterior_formula():
    y = NN_Y
    n = y.size
    s2, s02 = 5.0, 3.0
    m, sd = normal_normal_posterior(y, SIGMA, MU0, SIGMA0)
    # Charest & Han Sec. 3.3, written with variances.
    assert m == pytest.approx((s2 * MU0 + s02 * y.sum()) / (s2 + n * s02), rel=1e-14)
    assert sd**2 == pytest.approx(s02 * s2 / (n * s02 + s2), rel=1e-14)


@pytest.mark.parametrize("n_bins", [5, 20, 100])
def test_normal_normal_remove_matches_reference(n_bins):
    got = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, n_bins, pointwise=True)
    assert got.shape == NN_Y.shape
    np.testing.assert_allclose(got, NN_REMOVE[n_bins], rtol=REF_RTOL)
    assert normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, n_bins) == pytest.approx(
        max(NN_REMOVE[n_bins]), rel=REF_RTOL
    )


def test_normal_normal_sequence_bins_shapes():
    eps = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, [5, 20, 100])
    np.testing.assert_allclose(eps, [max(NN_REMOVE[b]) for b in (5, 20, 100)], rtol=REF_RTOL)
    pw = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, [5, 20, 100], pointwise=True)
    assert pw.shape == (NN_Y.size, 3)
    np.testing.assert_allclose(pw[:, 1], NN_REMOVE[20], rtol=REF_RTOL)


def test_normal_normal_replace_matches_reference():
    reps = np.column_stack([NN_Y + 4.0, np.full(NN_Y.size, 10.0)])
    got = normal_normal_edp(
        NN_Y, SIGMA, MU0, SIGMA0, 20, neighbour="replace", replacements=reps, pointwise=True
    )
    np.testing.assert_allclose(got, NN_REPLACE_B20, rtol=REF_RTOL)


def test_normal_normal_n100_reference():
    pw = normal_normal_edp(nn_y100(), SIGMA, MU0, SIGMA0, 50, pointwise=True)
    assert pw.max() == pytest.approx(NN100_REMOVE_B50_MAX, rel=REF_RTOL)
    assert int(np.argmax(pw)) == NN100_REMOVE_B50_ARGMAX


def test_normal_normal_replace_by_itself_is_zero():
    eps = normal_normal_edp(
        NN_Y, SIGMA, MU0, SIGMA0, [5, 250], neighbour="replace", replacements=NN_Y
    )
    np.testing.assert_array_equal(eps, 0.0)  # identical posteriors: exactly zero


def test_normal_normal_reflection_symmetry():
    # Reflecting the data about the prior mean mirrors every posterior: same epsilon.
    a = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, [7, 40], pointwise=True)
    b = normal_normal_edp(2 * MU0 - NN_Y, SIGMA, MU0, SIGMA0, [7, 40], pointwise=True)
    np.testing.assert_allclose(a, b, rtol=1e-9)  # floating-point round-off only


def test_normal_normal_grows_with_bins_and_shrinks_with_n(rng):
    # Charest & Han Figure 2: eps increases with B and decreases with n.
    nested = [5, 10, 20, 40, 80, 160]  # nested bins: monotonicity is a theorem
    paper = [10, 20, 50, 100, 250]  # the paper's grid: monotone in their Figure 2
    by_n = []
    for n in (100, 1000, 10_000):
        y = rng.normal(10.0, SIGMA, size=n)
        assert np.all(np.diff(normal_normal_edp(y, SIGMA, MU0, SIGMA0, nested)) >= -1e-12)
        eps = normal_normal_edp(y, SIGMA, MU0, SIGMA0, paper)
        assert np.all(np.diff(eps) > 0)
        by_n.append(eps)
    by_n = np.array(by_n)
    assert np.all(np.diff(by_n, axis=0) < 0)


def test_normal_normal_outlier_is_the_most_disclosive():
    pw = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, 20, pointwise=True)
    assert int(np.argmax(pw)) == int(np.argmax(np.abs(NN_Y - NN_Y.mean())))


def test_normal_normal_heteroscedastic_equals_common_sigma():
    a = normal_normal_edp(NN_Y, SIGMA, MU0, SIGMA0, 20, pointwise=True)
    b = normal_normal_edp(NN_Y, np.full(NN_Y.size, SIGMA), MU0, SIGMA0, 20, pointwise=True)
    np.testing.assert_array_equal(a, b)


def test_normal_normal_replace_worst_case_over_columns():
    reps = np.column_stack([NN_Y + 4.0, np.full(NN_Y.size, 10.0)])
    both = normal_normal_edp(
        NN_Y, SIGMA, MU0, SIGMA0, 20, neighbour="replace", replacements=reps, pointwise=True
    )
    cols = [
        normal_normal_edp(
            NN_Y,
            SIGMA,
            MU0,
            SIGMA0,
            20,
            neighbour="replace",
            replacements=reps[:, k],
            pointwise=True,
        )
        for k in range(2)
    ]
    np.testing.assert_array_equal(both, np.maximum(*cols))


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"neighbour": "replace"}, "replacements"),
        ({"replacements": np.zeros(7)}, "only used"),
        ({"neighbour": "replace", "replacements": np.zeros(3)}, "length"),
        ({"sigma": -1.0}, "sigma"),
        ({"bins": [5, 0]}, "bins"),
    ],
)
def test_normal_normal_validation(kwargs, match):
    args = {"y": NN_Y, "sigma": SIGMA, "mu0": MU0, "sigma0": SIGMA0, "bins": 5} | kwargs
    with pytest.raises(ValueError, match=match):
        normal_normal_edp(**args)
