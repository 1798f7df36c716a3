"""Differential privacy of finite mechanisms and the disclosure-risk measures built on it.

Four families of tools:

- DP and conditional DP (CDP) epsilon of any finite mechanism given as a transition matrix
  (Charest & Han 2017, Sec. 3.1).
- McClure & Reiter (2012): an intruder's absolute risk R_j (eq. 5), relative risk RR_j
  (eq. 8) and expected risk increase ER_j (eq. 6) for the Beta-Bernoulli synthesizer, and
  the joint (RR, R) acceptable-region assessment over intruder priors (Sec. 4).
- Lee & Clifton (2011): the adversary's posterior beliefs over possible worlds for a
  Laplace mechanism on any query, the risk of disclosure Gamma, the closed-form upper
  bound on epsilon (eq. 7) and the search for the largest epsilon with worst-case belief
  at most rho.
- Bailie & Gong: epsilon-DP as an interval of measures: posterior bounds
  ``pi(theta) exp(+-eps d**)``, prior-predictive bounds for a given mechanism and the
  Neyman-Pearson power bound ``alpha exp(d** eps)``.

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." *Journal of Privacy and Confidentiality* 7(3), 2017. Sec. 3.1, Table 1,
   Figure 1.
.. [2] McClure, D. and Reiter, J. P. "Differential Privacy and Statistical Disclosure Risk
   Measures: An Investigation with Binary Synthetic Data." *Transactions on Data Privacy*
   5, 2012, 535-552.
.. [3] Lee, J. and Clifton, C. "How Much Is Enough? Choosing epsilon for Differential
   Privacy." *Information Security (ISC 2011)*, LNCS 7001, 325-340.
.. [4] Bailie, J. and Gong, R. "Differential Privacy: General Inferential Limits via
   Intervals of Measures." *ISIPTA 2023*, PMLR 215.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
import xarray as xr
from scipy import special, stats

from pymc_edp.calibration import BernoulliSynthesizer, bernoulli_synthesizer_prior

__all__ = [
    "AcceptableRegion",
    "DensityBounds",
    "DisclosureAssessment",
    "PossibleWorlds",
    "bailie_gong_posterior_bounds",
    "bailie_gong_power_bound",
    "bailie_gong_prior_predictive_bounds",
    "conditional_dp_distribution",
    "conditional_dp_epsilon",
    "dp_epsilon",
    "hamming_distances",
    "lee_clifton_epsilon_bound",
    "lee_clifton_max_epsilon",
    "lee_clifton_risk",
    "lee_clifton_sensitivity",
    "lee_clifton_worst_case_belief",
    "mcclure_reiter_assessment",
    "mcclure_reiter_expected_risk",
    "mcclure_reiter_relative_risk",
    "mcclure_reiter_risk",
    "possible_world_beliefs",
    "possible_worlds",
]


# --------------------------------------------------------------------------------------
# DP of finite mechanisms (transition matrices)
# --------------------------------------------------------------------------------------
def _log_transition(transition, log: bool = False) -> np.ndarray:
    t = np.asarray(transition, dtype=float)
    if t.ndim != 2 or t.shape[0] < 2 or t.shape[1] < 1:
        raise ValueError(f"`transition` must be 2-D with at least two rows, got {t.shape}.")
    if log:
        if np.any(np.isnan(t)) or np.any(np.isposinf(t)):
            raise ValueError("A log `transition` must not hold nan or +inf.")
        return t
    if np.any(np.isnan(t)) or np.any(t < 0) or np.any(np.isinf(t)):
        raise ValueError("`transition` must hold finite, non-negative probabilities.")
    with np.errstate(divide="ignore"):
        return np.log(t)


def _check_pairs(pairs, n_rows: int) -> np.ndarray:
    p = np.asarray(pairs)
    if p.ndim != 2 or p.shape[1] != 2 or p.shape[0] == 0:
        raise ValueError("`pairs` must be a non-empty sequence of (row, row) index pairs.")
    if not np.issubdtype(p.dtype, np.integer):
        raise ValueError("`pairs` must hold integer row indices.")
    if np.any(p < 0) or np.any(p >= n_rows):
        raise ValueError(f"`pairs` indices must lie in [0, {n_rows - 1}].")
    return p.astype(np.intp)


def _pair_epsilons(log_t: np.ndarray, pairs: np.ndarray | None) -> np.ndarray:
    """``max_c |log T[i, c] - log T[j, c]|`` for each neighbouring pair of rows (i, j).

    A column where both rows are zero carries no information and contributes 0; a column
    where exactly one is zero makes the pair infinitely distinguishable (``inf``).
    """
    if pairs is None:
        a, b = log_t[1:], log_t[:-1]
    else:
        a, b = log_t[pairs[:, 0]], log_t[pairs[:, 1]]
    with np.errstate(invalid="ignore"):
        diff = np.abs(a - b)
    diff = np.where(np.isneginf(a) & np.isneginf(b), 0.0, diff)
    return diff.max(axis=1)


def dp_epsilon(
    transition: np.ndarray | xr.DataArray,
    *,
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = None,
    log: bool = False,
) -> float:
    """DP epsilon of a finite mechanism given by its transition matrix.

    Rows are indexed by the confidential statistic (the count x) and columns by the
    released value; row x is ``P(output | x)``. Neighbouring datasets are adjacent rows
    (``x`` and ``x + 1``: one record changed), so::

        eps = max over x, c of |log T[x + 1, c] - log T[x, c]|.

    Because the output space is finite, the maximum over single outputs equals the maximum
    over all events (sets of outputs) in the DP definition. Rows may also be densities of a
    continuous mechanism on a grid of outputs; the result is then the sup of the log
    density ratio over that grid.

    Parameters
    ----------
    transition : array_like, shape (n_rows, n_outputs)
        Non-negative probabilities (rows need not be normalised).
    pairs : sequence of (int, int), optional
        Neighbouring rows for a general neighbour graph (e.g. the compositions of a
        Dirichlet-Multinomial synthesizer). Default: adjacent rows.
    log : bool, default False
        ``transition`` holds log-probabilities (``-inf`` for zeros); use for mechanisms
        whose probabilities underflow.

    Returns
    -------
    float
        Epsilon. A column that is zero in one row of a neighbouring pair but positive in
        the other gives ``inf`` (no finite epsilon); a column zero in both is ignored.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), eq. (1),
       Table 1 (epsilon = log 11).
    .. [2] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, Appendix A.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import dp_epsilon
    >>> rr = np.array([[0.75, 0.25], [0.25, 0.75]])  # randomized response
    >>> round(dp_epsilon(rr), 4), round(float(np.log(3)), 4)
    (1.0986, 1.0986)
    >>> from pymc_edp.conjugate import beta_binomial_synthesizer_matrix
    >>> t = beta_binomial_synthesizer_matrix(5, 0.5, 0.5)
    >>> round(dp_epsilon(t), 4)  # log 11, Charest & Han's Table 1
    2.3979
    >>> log_t = beta_binomial_synthesizer_matrix(5, 0.5, 0.5, log=True)
    >>> round(dp_epsilon(log_t, log=True), 4)
    2.3979
    """
    log_t = _log_transition(transition, log)
    p = None if pairs is None else _check_pairs(pairs, log_t.shape[0])
    return float(_pair_epsilons(log_t, p).max())


def conditional_dp_epsilon(
    transition: np.ndarray | xr.DataArray,
    x: int | Sequence[int] | np.ndarray,
    *,
    pairs: Sequence[tuple[int, int]] | np.ndarray | None = None,
    log: bool = False,
) -> float | np.ndarray:
    """Conditional DP (CDP) epsilon of a finite mechanism for the observed dataset(s) x.

    Charest & Han (2017, Sec. 3.1) condition the DP ratio on the observed data: only the
    neighbours of the observed dataset are compared with it. With rows indexed by the count
    x, the neighbours are the rows ``x - 1`` and ``x + 1`` that exist, so::

        cdp(x) = max over x' in {x - 1, x + 1}, c of |log T[x', c] - log T[x, c]|.

    (The paper's definition is written with D^{-i}; its worked example, Table 1, compares
    adjacent rows of equal size, i.e. one record changed, and that is what is computed.)
    The maximum of ``cdp`` over all x is :func:`dp_epsilon`.

    Parameters
    ----------
    transition : array_like, shape (n_rows, n_outputs)
        Transition matrix, row x = ``P(output | x)``.
    x : int or array_like of int
        Observed row(s); vectorised.
    pairs : sequence of (int, int), optional
        General neighbour graph, as in :func:`dp_epsilon`.
    log : bool, default False
        ``transition`` holds log-probabilities.

    Returns
    -------
    float or numpy.ndarray
        CDP epsilon, a float for scalar ``x``, else an array shaped like ``x``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), Sec. 3.1,
       Table 1 (1.466 for x = 2, 3; 2.398 for x = 0, 1, 4, 5).

    Examples
    --------
    >>> from pymc_edp.conjugate import beta_binomial_synthesizer_matrix
    >>> from pymc_edp.risk import conditional_dp_epsilon
    >>> t = beta_binomial_synthesizer_matrix(5, 0.5, 0.5)  # Charest & Han, Table 1
    >>> round(conditional_dp_epsilon(t, 2), 3)
    1.466
    >>> conditional_dp_epsilon(t, [0, 1, 2, 3, 4, 5]).round(3).tolist()
    [2.398, 2.398, 1.466, 1.466, 2.398, 2.398]
    """
    log_t = _log_transition(transition, log)
    n_rows = log_t.shape[0]
    x_arr = np.asarray(x)
    if not np.issubdtype(x_arr.dtype, np.integer):
        raise ValueError(f"`x` must be integer row indices, got {x!r}.")
    if np.any(x_arr < 0) or np.any(x_arr >= n_rows):
        raise ValueError(f"`x` must lie in [0, {n_rows - 1}].")
    if pairs is None:
        e = _pair_epsilons(log_t, None)  # e[k]: rows k and k + 1
        left = np.concatenate([[-np.inf], e])  # neighbour x - 1
        right = np.concatenate([e, [-np.inf]])  # neighbour x + 1
        per_row = np.maximum(left, right)
    else:
        p = _check_pairs(pairs, n_rows)
        e = _pair_epsilons(log_t, p)
        per_row = np.full(n_rows, -np.inf)
        np.maximum.at(per_row, p[:, 0], e)
        np.maximum.at(per_row, p[:, 1], e)
    out = per_row[x_arr]
    if np.any(np.isneginf(out)):
        raise ValueError("Some observed rows have no neighbour in `pairs`.")
    return float(out) if out.ndim == 0 else out


def conditional_dp_distribution(
    transition: np.ndarray | xr.DataArray, *, log: bool = False
) -> xr.DataArray:
    """CDP epsilon of every possible dataset of a count mechanism (Charest & Han, Fig. 1).

    Parameters
    ----------
    transition : array_like, shape (n + 1, n_outputs)
        Transition matrix with rows indexed by the count ``x = 0..n``.
    log : bool, default False
        ``transition`` holds log-probabilities.

    Returns
    -------
    xarray.DataArray
        ``cdp_epsilon`` over dim ``"x"`` (one value per possible count, each count counted
        once, as in Charest & Han's dotplots); ``attrs["dp_epsilon"]`` holds the DP epsilon
        (the maximum). Summaries such as ``.median()`` are then over the ``n + 1`` possible
        counts, not weighted by how many binary datasets share a count.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), Sec. 3.1,
       Figure 1.

    Examples
    --------
    >>> from pymc_edp.conjugate import beta_binomial_synthesizer_matrix
    >>> from pymc_edp.risk import conditional_dp_distribution
    >>> cdp = conditional_dp_distribution(beta_binomial_synthesizer_matrix(5, 0.5, 0.5))
    >>> cdp.dims, round(cdp.attrs["dp_epsilon"], 4)
    (('x',), 2.3979)
    >>> cdp.round(3).values.tolist()
    [2.398, 2.398, 1.466, 1.466, 2.398, 2.398]
    """
    n_rows = np.asarray(transition).shape[0]
    cdp = conditional_dp_epsilon(transition, np.arange(n_rows), log=log)
    return xr.DataArray(
        cdp,
        dims=("x",),
        coords={"x": np.arange(n_rows)},
        name="cdp_epsilon",
        attrs={"dp_epsilon": float(np.max(cdp))},
    )


# --------------------------------------------------------------------------------------
# McClure & Reiter: intruder risk for the Beta-Bernoulli synthesizer
# --------------------------------------------------------------------------------------
_CHUNK_ELEMENTS = 1 << 21


def _as_float_or_array(a: np.ndarray) -> float | np.ndarray:
    return float(a) if np.ndim(a) == 0 else a


def _check_int_scalar(value, name: str, minimum: int) -> int:
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)


def _mr_synthesizer(
    epsilon: float | BernoulliSynthesizer, n: int, n_synthetic: int | None
) -> tuple[float, float, int, int]:
    """``(alpha, beta, n, n_s)`` of the synthesizer; ``epsilon`` may be a synthesizer."""
    n = _check_int_scalar(n, "n", 1)
    if isinstance(epsilon, BernoulliSynthesizer):
        if n_synthetic is not None and n_synthetic != epsilon.n_synthetic:
            raise ValueError("`n_synthetic` disagrees with the synthesizer passed.")
        return float(epsilon.alpha), float(epsilon.beta), n, int(epsilon.n_synthetic)
    n_s = n if n_synthetic is None else _check_int_scalar(n_synthetic, "n_synthetic", 1)
    syn = bernoulli_synthesizer_prior(float(epsilon), n_s)
    return syn.alpha, syn.beta, n, n_s


def _mr_log_likelihood_ratio(x_minus_j, x_synthetic, n, alpha, beta, n_s) -> np.ndarray:
    """``log Bin(X*; n_s, p1) - log Bin(X*; n_s, p0)`` of McClure & Reiter's eq. (5).

    ``p1 = (X_{-j} + 1 + alpha) / (n + alpha + beta)``, ``p0 = (X_{-j} + alpha) / (...)``;
    the binomial coefficients cancel and the two log-ratios are written with ``log1p`` so
    that they stay exact when alpha is huge (small epsilon).
    """
    xm = np.asarray(x_minus_j, dtype=float)
    xs = np.asarray(x_synthetic, dtype=float)
    return xs * np.log1p(1.0 / (xm + alpha)) + (n_s - xs) * np.log1p(-1.0 / (n - xm + beta))


def _logit(p) -> np.ndarray:
    p = np.asarray(p, dtype=float)
    return np.log(p) - np.log1p(-p)


def _check_prior(prior) -> np.ndarray:
    w = np.asarray(prior, dtype=float)
    if np.any(~((w > 0) & (w < 1))):
        raise ValueError(f"`prior` P(Y_j = 1) must lie in (0, 1), got {prior!r}.")
    return w


def mcclure_reiter_risk(
    x: int | np.ndarray,
    x_synthetic: int | np.ndarray,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    n_synthetic: int | None = None,
    prior: float | np.ndarray = 0.5,
    y: int = 1,
) -> float | np.ndarray:
    """Intruder's posterior probability of the true value of record j, R_j (eq. 5).

    The intruder knows every record but j (``D_{-j}``), the synthesizer and its parameters
    (McClure & Reiter's S), and sees ``x_synthetic`` ones among the ``n_synthetic``
    released records. With prior ``w = P(Y_j = 1)``,

        R_j = Bin(X*; n_s, p1) w / (Bin(X*; n_s, p1) w + Bin(X*; n_s, p0) (1 - w)),

    ``p1 = (X_{-j} + 1 + a) / (n + a + b)``, ``p0 = (X_{-j} + a) / (n + a + b)``, for a
    record with ``Y_j = 1``; for ``y=0`` the posterior probability of ``Y_j = 0`` is
    returned instead (the paper's choice when D holds no ones).

    Parameters
    ----------
    x : int or array_like
        Number of ones in the confidential data D (record j included), ``X``.
    x_synthetic : int or array_like
        Number of ones in the synthetic data, ``X*``.
    n : int
        Number of confidential records.
    epsilon : float or BernoulliSynthesizer
        DP epsilon of the synthesizer, which then uses ``alpha = beta = 1 / (e^(eps/n_s) -
        1)`` (:func:`pymc_edp.calibration.bernoulli_synthesizer_prior`); or the synthesizer
        itself, for other priors.
    n_synthetic : int, optional
        Number of synthetic records ``n_s`` (default ``n``).
    prior : float or array_like, default 0.5
        Intruder's prior ``w = P(Y_j = 1 | D_{-j}, S)`` in (0, 1).
    y : {1, 0}
        True value of the attacked record j.

    Returns
    -------
    float or numpy.ndarray
        ``R_j``, broadcast over ``x``, ``x_synthetic`` and ``prior``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, eq. (5).

    Examples
    --------
    McClure & Reiter's setting, n = n_s = 1000 records, a record whose value is the only one
    in the data (x = 1), intruder prior 0.5:

    >>> from pymc_edp.risk import mcclure_reiter_risk
    >>> round(mcclure_reiter_risk(1, 1, 1000, epsilon=0.01), 4)
    0.4975
    >>> mcclure_reiter_risk(1, [0, 1, 2, 5], 1000, epsilon=1000).round(4).tolist()
    [0.269, 0.5003, 0.7315, 0.9821]
    """
    a, b, n, n_s = _mr_synthesizer(epsilon, n, n_synthetic)
    if y not in (0, 1):
        raise ValueError(f"`y` must be 0 or 1, got {y!r}.")
    x = np.asarray(x)
    xs = np.asarray(x_synthetic)
    w = _check_prior(prior)
    if np.any(x < y) or np.any(x > n - 1 + y):
        raise ValueError(f"`x` must lie in [{y}, {n - 1 + y}] for a record with Y_j = {y}.")
    if np.any(xs < 0) or np.any(xs > n_s):
        raise ValueError(f"`x_synthetic` must lie in [0, {n_s}].")
    llr = _mr_log_likelihood_ratio(x - y, xs, n, a, b, n_s)
    logit = _logit(w) + llr if y == 1 else -_logit(w) - llr
    return _as_float_or_array(special.expit(logit))


def mcclure_reiter_relative_risk(
    x: int | np.ndarray,
    x_synthetic: int | np.ndarray,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    n_synthetic: int | None = None,
    prior: float | np.ndarray = 0.5,
    y: int = 1,
) -> float | np.ndarray:
    """Relative risk ``RR_j = p(Y_j | D*, A, S) / p(Y_j | A, S)`` (McClure & Reiter eq. 8).

    Same arguments as :func:`mcclure_reiter_risk`; the prior probability of the true value
    is ``prior`` for ``y=1`` and ``1 - prior`` for ``y=0``.

    Returns
    -------
    float or numpy.ndarray
        ``R_j`` divided by the prior probability of the true value (bounded by its
        reciprocal since Y_j is discrete).

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, eq. (8).

    Examples
    --------
    >>> from pymc_edp.risk import mcclure_reiter_relative_risk
    >>> rr = mcclure_reiter_relative_risk(1, [0, 1, 5, 10], 10, epsilon=1.0, prior=0.1)
    >>> rr.round(4).tolist()
    [0.616, 0.7104, 1.2343, 2.3197]
    """
    r = mcclure_reiter_risk(x, x_synthetic, n, epsilon, n_synthetic=n_synthetic, prior=prior, y=y)
    w = _check_prior(prior)
    return _as_float_or_array(np.asarray(r) / (w if y == 1 else 1.0 - w))


def mcclure_reiter_expected_risk(
    p0: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    n: int,
    n_synthetic: int | None = None,
    prior: float = 0.5,
) -> float | xr.DataArray:
    """Expected increase in intruder risk, ER_j (McClure & Reiter eq. 6).

    Averages ``max(R_j, pi) - pi`` (``pi`` the prior probability of the true value) over
    the confidential count ``X ~ Binomial(n, p0)`` and the synthetic count
    ``X* | X ~ Binomial(n_s, (X + a) / (n + a + b))`` (eq. 7), attacking a record with
    ``Y_j = 1`` -- or, when ``X = 0``, a record with ``Y_j = 0``, as in the paper.

    Parameters
    ----------
    p0 : float or 1-D array_like
        Population proportion(s) of ones.
    epsilon : float or 1-D array_like
        DP epsilon(s) of the synthesizer (``alpha = beta = 1 / (e^(eps/n_s) - 1)``).
    n : int
        Number of confidential records.
    n_synthetic : int, optional
        Number of synthetic records (default ``n``).
    prior : float, default 0.5
        Intruder's prior ``P(Y_j = 1)``.

    Returns
    -------
    float or xarray.DataArray
        A float for scalar inputs; otherwise ``expected_risk`` with dims ``("p0",
        "epsilon")`` for those arguments that are arrays.

    Notes
    -----
    Reproduces McClure & Reiter's Table 1 (n = n_s = 1000, prior 0.5), e.g. 0.125 for
    ``p0 = 0.001``, ``eps = 1000`` and 3.14e-5 (printed 3.13e-05) for ``eps = 0.01``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, eqs. (6)-(7), Table 1.

    Examples
    --------
    Two entries of McClure & Reiter's Table 1 (n = n_s = 1000, ``p0 = 0.001``):

    >>> from pymc_edp.risk import mcclure_reiter_expected_risk
    >>> round(mcclure_reiter_expected_risk(0.001, 1000, 1000), 4)
    0.1252
    >>> f"{mcclure_reiter_expected_risk(0.001, 0.01, 1000):.3g}"
    '3.14e-05'
    """
    p0_arr = np.asarray(p0, dtype=float)
    eps_arr = np.asarray(epsilon, dtype=float)
    if p0_arr.ndim > 1 or eps_arr.ndim > 1:
        raise ValueError("`p0` and `epsilon` must be scalars or 1-D.")
    if np.any(~((p0_arr >= 0) & (p0_arr <= 1))):
        raise ValueError("`p0` must lie in [0, 1].")
    w = float(_check_prior(prior))
    n = _check_int_scalar(n, "n", 1)
    n_s = n if n_synthetic is None else _check_int_scalar(n_synthetic, "n_synthetic", 1)

    big_x = np.arange(n + 1)
    p_x = stats.binom.pmf(big_x[None, :], n, np.atleast_1d(p0_arr)[:, None])  # (P, n+1)
    xs = np.arange(n_s + 1, dtype=float)[None, :]
    log_binom_coef = (
        special.gammaln(n_s + 1) - special.gammaln(xs + 1) - special.gammaln(n_s - xs + 1)
    )
    out = np.empty((p_x.shape[0], np.atleast_1d(eps_arr).size))
    chunk = max(1, _CHUNK_ELEMENTS // (n_s + 1))
    for e_idx, eps in enumerate(np.atleast_1d(eps_arr)):
        a, b, _, _ = _mr_synthesizer(float(eps), n, n_s)
        g = np.empty(n + 1)  # expected excess risk given X
        for start in range(0, n + 1, chunk):
            xx = big_x[start : start + chunk, None].astype(float)
            is_one = xx >= 1  # attack a record with Y_j = 1 unless X = 0
            llr = _mr_log_likelihood_ratio(np.where(is_one, xx - 1, 0.0), xs, n, a, b, n_s)
            pi = np.where(is_one, w, 1.0 - w)
            risk = special.expit(np.where(is_one, _logit(w) + llr, -_logit(w) - llr))
            p_gen = (xx + a) / (n + a + b)
            log_p_xs = (
                log_binom_coef + special.xlogy(xs, p_gen) + special.xlog1py(n_s - xs, -p_gen)
            )
            g[start : start + chunk] = np.sum((np.maximum(risk, pi) - pi) * np.exp(log_p_xs), 1)
        out[:, e_idx] = p_x @ g

    if p0_arr.ndim == 0 and eps_arr.ndim == 0:
        return float(out[0, 0])
    dims, coords = [], {}
    if p0_arr.ndim == 1:
        dims.append("p0")
        coords["p0"] = p0_arr
    if eps_arr.ndim == 1:
        dims.append("epsilon")
        coords["epsilon"] = eps_arr
    values = out[:, 0] if eps_arr.ndim == 0 else out[0] if p0_arr.ndim == 0 else out
    return xr.DataArray(
        values,
        dims=tuple(dims),
        coords=coords,
        name="expected_risk",
        attrs={"n": n, "n_synthetic": n_s, "prior": w},
    )


@dataclass(frozen=True)
class AcceptableRegion:
    """Acceptable part of the (RR, R) plane as a step function of the absolute risk.

    A point is acceptable when ``RR <= rr_max[k]`` for the first ``k`` with
    ``R <= r_upper[k]``. McClure & Reiter's examples -- ``RR <= 10`` as long as
    ``R <= 0.10``, and ``RR <= 1.05`` for high ``R`` -- read
    ``AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))``.

    Parameters
    ----------
    r_upper : tuple of float
        Increasing upper ends of the absolute-risk segments; the last must be >= 1.
    rr_max : tuple of float
        Largest acceptable relative risk in each segment.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, Sec. 4.

    Examples
    --------
    >>> from pymc_edp.risk import AcceptableRegion
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> region.rr_max
    (10.0, 1.05)
    >>> region(relative_risk=[5.0, 5.0, 1.02], risk=[0.05, 0.5, 0.9]).tolist()
    [True, False, True]
    """

    r_upper: tuple[float, ...]
    rr_max: tuple[float, ...]

    def __post_init__(self):
        r = tuple(float(v) for v in self.r_upper)
        rr = tuple(float(v) for v in self.rr_max)
        if len(r) == 0 or len(r) != len(rr):
            raise ValueError("`r_upper` and `rr_max` must be non-empty and of equal length.")
        if np.any(np.diff(r) <= 0) or r[-1] < 1.0:
            raise ValueError("`r_upper` must increase and end at a value >= 1.")
        object.__setattr__(self, "r_upper", r)
        object.__setattr__(self, "rr_max", rr)

    def __call__(self, relative_risk, risk) -> np.ndarray:
        """Return a boolean array: is each (RR, R) point acceptable."""
        seg = np.searchsorted(np.asarray(self.r_upper), np.asarray(risk, dtype=float))
        seg = np.minimum(seg, len(self.r_upper) - 1)
        return np.asarray(relative_risk, dtype=float) <= np.asarray(self.rr_max)[seg]


@dataclass(frozen=True)
class DisclosureAssessment:
    """Joint (RR, R) assessment of one released dataset over a grid of intruder priors.

    Attributes
    ----------
    risks : xarray.Dataset
        Over dim ``"prior"`` (the intruder's ``P(Y_j = 1)``): ``risk`` (R_j),
        ``relative_risk`` (RR_j) and ``acceptable`` (bool).

    Examples
    --------
    >>> from pymc_edp.risk import AcceptableRegion, mcclure_reiter_assessment
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> a = mcclure_reiter_assessment(
    ...     1, 1, 10, 5.0, acceptable=region, priors=[0.01, 0.05, 0.5, 0.9]
    ... )
    >>> a.risks["risk"].round(4).values.tolist()
    [0.0073, 0.037, 0.4217, 0.8678]
    >>> a.acceptable, a.unacceptable_priors.size
    (True, 0)
    """

    risks: xr.Dataset

    @property
    def acceptable(self) -> bool:
        """True when every intruder prior gives an acceptable (RR, R)."""
        return bool(self.risks["acceptable"].all())

    @property
    def unacceptable_priors(self) -> np.ndarray:
        """The intruder priors w whose (RR, R) falls outside the acceptable region."""
        return self.risks["prior"].values[~self.risks["acceptable"].values]


def mcclure_reiter_assessment(
    x: int,
    x_synthetic: int,
    n: int,
    epsilon: float | BernoulliSynthesizer,
    *,
    acceptable: AcceptableRegion | Callable[[np.ndarray, np.ndarray], np.ndarray],
    priors: Sequence[float] | np.ndarray | None = None,
    n_synthetic: int | None = None,
    y: int = 1,
) -> DisclosureAssessment:
    """McClure & Reiter's joint (RR, R) risk assessment over intruder priors (Sec. 4).

    Parameters
    ----------
    x, x_synthetic, n, epsilon, n_synthetic, y
        As in :func:`mcclure_reiter_risk` (scalars).
    acceptable : AcceptableRegion or callable
        The data holder's acceptable region; a callable takes ``(relative_risk, risk)``
        arrays and returns a boolean array.
    priors : array_like, optional
        Intruder priors ``w = P(Y_j = 1)``; default 1000 equally spaced values in (0, 1)
        (``k / 1001``), as in the paper's Figures 3-4.

    Returns
    -------
    DisclosureAssessment
        ``.risks`` holds R, RR and the verdict per prior; ``.acceptable`` is True when the
        release is safe for every prior considered.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, Sec. 4, Figures 3-4.

    Examples
    --------
    >>> from pymc_edp.risk import AcceptableRegion, mcclure_reiter_assessment
    >>> region = AcceptableRegion(r_upper=(0.1, 1.0), rr_max=(10.0, 1.05))
    >>> mcclure_reiter_assessment(1, 1, 10, 1.0, acceptable=region).acceptable
    True
    >>> a = mcclure_reiter_assessment(1, 1, 10, 10.0, acceptable=region)
    >>> a.acceptable, a.unacceptable_priors.size, round(float(a.unacceptable_priors.min()), 4)
    (False, 439, 0.0909)
    """
    w = np.arange(1, 1001) / 1001 if priors is None else np.asarray(priors, dtype=float)
    if w.ndim != 1:
        raise ValueError("`priors` must be 1-D.")
    kwargs = {"n_synthetic": n_synthetic, "prior": w, "y": y}
    r = np.asarray(mcclure_reiter_risk(x, x_synthetic, n, epsilon, **kwargs))
    rr = np.asarray(mcclure_reiter_relative_risk(x, x_synthetic, n, epsilon, **kwargs))
    ok = np.asarray(acceptable(rr, r), dtype=bool)
    ds = xr.Dataset(
        {
            "risk": ("prior", r),
            "relative_risk": ("prior", rr),
            "acceptable": ("prior", np.broadcast_to(ok, r.shape).copy()),
        },
        coords={"prior": w},
        attrs={"x": int(x), "x_synthetic": int(x_synthetic), "n": int(n), "y": int(y)},
    )
    return DisclosureAssessment(risks=ds)


# --------------------------------------------------------------------------------------
# Lee & Clifton: possible worlds
# --------------------------------------------------------------------------------------
def _query_value(query: Callable, world: np.ndarray) -> np.ndarray:
    v = np.atleast_1d(np.asarray(query(world), dtype=float))
    if v.ndim != 1 or not np.all(np.isfinite(v)):
        raise ValueError("`query` must return a finite scalar or 1-D vector.")
    return v


def lee_clifton_sensitivity(universe: Sequence | np.ndarray, query: Callable) -> float:
    """Global L1 sensitivity of ``query`` over the possible worlds of ``universe``.

    ``Delta f = max over worlds w and records t in w of ||f(w) - f(w minus t)||_1``: the
    largest change one record's removal makes to the query, over every dataset of size
    ``n - 1`` drawn from the universe of ``n`` records (17/6 for the mean and 4 for the
    median of Lee & Clifton's absence days {1, 2, 3, 10}).

    Parameters
    ----------
    universe : array_like
        The n records (first axis) the adversary knows.
    query : callable
        ``query(records) -> float or 1-D array``.

    Returns
    -------
    float

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). "How Much Is Enough? Choosing epsilon for
       Differential Privacy." *ISC 2011*, LNCS 7001, Sec. 4.1 and 6 (Table 4).

    Examples
    --------
    Lee & Clifton's absence days:

    >>> import numpy as np
    >>> from pymc_edp.risk import lee_clifton_sensitivity
    >>> round(lee_clifton_sensitivity([1, 2, 3, 10], np.mean), 4)  # 17/6
    2.8333
    >>> lee_clifton_sensitivity([1, 2, 3, 10], np.median)
    4.0
    """
    u = np.asarray(universe)
    if u.shape[0] < 3:
        raise ValueError("The universe needs at least 3 records.")
    best = 0.0
    for i in range(u.shape[0]):
        world = np.delete(u, i, axis=0)
        f_w = _query_value(query, world)
        for t in range(world.shape[0]):
            best = max(
                best, float(np.abs(f_w - _query_value(query, np.delete(world, t, 0))).sum())
            )
    return best


@dataclass(frozen=True)
class PossibleWorlds:
    """The adversary's possible worlds: the universe with one record missing.

    World i is the universe without record i (Lee & Clifton's ``X'``); the adversary knows
    the universe and the mechanism and tries to learn which record is missing.

    Attributes
    ----------
    universe : numpy.ndarray
        The n records.
    values : numpy.ndarray
        Query value on each world, shape ``(n, k)``.
    sensitivity : float
        ``Delta f`` used for the Laplace scale.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import possible_worlds
    >>> worlds = possible_worlds([1, 2, 3, 10], np.mean)
    >>> worlds.n, worlds.delta_v
    (4, 3.0)
    >>> worlds.distances[3].round(4).tolist()  # world {1, 2, 3} against the others
    [3.0, 2.6667, 2.3333, 0.0]
    """

    universe: np.ndarray
    values: np.ndarray
    sensitivity: float

    @property
    def n(self) -> int:
        """Number of possible worlds (= records in the universe)."""
        return int(self.values.shape[0])

    @property
    def distances(self) -> np.ndarray:
        """L1 distances ``||f(w_i) - f(w_k)||_1`` between the worlds' query values."""
        return np.abs(self.values[:, None, :] - self.values[None, :, :]).sum(axis=2)

    @property
    def delta_v(self) -> float:
        """``Delta v``: the largest distance between two worlds' query values."""
        return float(self.distances.max())


def possible_worlds(
    universe: Sequence | np.ndarray,
    query: Callable,
    *,
    sensitivity: float | None = None,
) -> PossibleWorlds:
    """Evaluate ``query`` on every possible world of ``universe`` (Lee & Clifton Sec. 4.3).

    Parameters
    ----------
    universe : array_like
        The n records (first axis).
    query : callable
        ``query(records) -> float or 1-D array``; any Python callable (mean, median, ...).
    sensitivity : float, optional
        ``Delta f``; computed by :func:`lee_clifton_sensitivity` (``O(n^2)`` query calls)
        when omitted.

    Returns
    -------
    PossibleWorlds

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Sec. 4.3.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import possible_worlds
    >>> worlds = possible_worlds([1, 2, 3, 10], np.mean)  # Lee & Clifton's absence days
    >>> worlds.values[:, 0].round(4).tolist()  # mean without 1, 2, 3, 10
    [5.0, 4.6667, 4.3333, 2.0]
    >>> round(worlds.sensitivity, 4), worlds.delta_v
    (2.8333, 3.0)
    """
    u = np.asarray(universe)
    if u.ndim == 0 or u.shape[0] < 3:
        raise ValueError("The universe needs at least 3 records.")
    values = np.stack([_query_value(query, np.delete(u, i, axis=0)) for i in range(u.shape[0])])
    if sensitivity is None:
        sensitivity = lee_clifton_sensitivity(u, query)
    sensitivity = float(sensitivity)
    if not (sensitivity > 0 and np.isfinite(sensitivity)):
        raise ValueError(f"The sensitivity must be finite and > 0, got {sensitivity}.")
    return PossibleWorlds(universe=u, values=values, sensitivity=sensitivity)


def _world_prior(prior, n: int) -> np.ndarray:
    if prior is None:
        return np.full(n, 1.0 / n)
    p = np.asarray(prior, dtype=float)
    if p.shape != (n,) or np.any(p < 0) or not p.sum() > 0:
        raise ValueError(f"`prior` must hold {n} non-negative weights.")
    return p / p.sum()


def possible_world_beliefs(
    universe: Sequence | np.ndarray,
    query: Callable,
    response: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
    *,
    prior: Sequence[float] | np.ndarray | None = None,
) -> xr.DataArray:
    """Adversary's posterior belief over possible worlds after a Laplace release.

    The mechanism releases ``response = f(X') + Laplace(Delta f / eps)``; the adversary's
    posterior on ``X' = w_i`` is (Lee & Clifton, Definition 3)

        beta(w_i) = pi_i exp(-||response - f(w_i)||_1 eps / Delta f) / sum_k (same),

    with the uniform prior ``pi_i = 1 / n`` of the paper unless ``prior`` is given.

    Parameters
    ----------
    universe : array_like
        The n records (first axis).
    query : callable
        ``query(records) -> float or 1-D array``.
    response : float or 1-D array_like
        The released (noisy) query answer.
    epsilon : float or 1-D array_like
        DP epsilon(s) of the Laplace mechanism.
    sensitivity : float, optional
        ``Delta f`` (default: :func:`lee_clifton_sensitivity`).
    prior : array_like, optional
        Prior weights on the worlds (default uniform).

    Returns
    -------
    xarray.DataArray
        ``belief`` over dim ``"world"`` (and ``"epsilon"`` first when ``epsilon`` is an
        array). World i is the universe without record i; for a 1-D universe the
        coordinate ``missing`` holds that record's value, and for a scalar query
        ``query_value`` holds ``f(w_i)``. The risk of disclosure Gamma is ``.max("world")``.

    Notes
    -----
    With the absence-days universe {1, 2, 3, 10}, the mean, response 2.2013 and eps = 2,
    the belief in {1, 2, 3} is 0.6180 (0.3390 for school years {1, 2, 3, 4}).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). "How Much Is Enough? Choosing epsilon for
       Differential Privacy." *ISC 2011*, LNCS 7001, Definitions 3 and 5, Sec. 4.4.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import possible_world_beliefs
    >>> b = possible_world_beliefs([1, 2, 3, 10], np.mean, response=2.2013, epsilon=2.0)
    >>> b["missing"].values.tolist()
    [1, 2, 3, 10]
    >>> b.round(4).values.tolist()
    [0.0988, 0.125, 0.1582, 0.618]
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    eps = np.asarray(epsilon, dtype=float)
    if eps.ndim > 1 or np.any(~(eps >= 0)) or not np.all(np.isfinite(eps)):
        raise ValueError("`epsilon` must be a finite non-negative scalar or 1-D array.")
    gamma = np.atleast_1d(np.asarray(response, dtype=float))
    if gamma.shape != (worlds.values.shape[1],):
        raise ValueError("`response` must have the shape of the query's value.")
    dist = np.abs(gamma[None, :] - worlds.values).sum(axis=1)  # (n,)
    log_prior = np.log(_world_prior(prior, worlds.n))
    logits = log_prior - np.atleast_1d(eps)[:, None] * dist[None, :] / worlds.sensitivity
    belief = np.exp(logits - special.logsumexp(logits, axis=1, keepdims=True))

    coords: dict = {"world": np.arange(worlds.n)}
    if worlds.universe.ndim == 1:
        coords["missing"] = ("world", worlds.universe)
    if worlds.values.shape[1] == 1:
        coords["query_value"] = ("world", worlds.values[:, 0])
    attrs = {"sensitivity": worlds.sensitivity}
    if eps.ndim == 0:
        return xr.DataArray(belief[0], dims=("world",), coords=coords, name="belief", attrs=attrs)
    coords["epsilon"] = eps
    return xr.DataArray(
        belief, dims=("epsilon", "world"), coords=coords, name="belief", attrs=attrs
    )


def lee_clifton_risk(
    universe: Sequence | np.ndarray,
    query: Callable,
    response: float | Sequence[float] | np.ndarray,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
) -> float | np.ndarray:
    """Risk of disclosure Gamma: the adversary's largest posterior belief (Definition 5).

    Parameters are those of :func:`possible_world_beliefs`.

    Returns
    -------
    float or numpy.ndarray
        ``max over worlds of beta(w)``, per epsilon when ``epsilon`` is an array.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, Definition 5.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import lee_clifton_risk
    >>> round(lee_clifton_risk([1, 2, 3, 10], np.mean, 2.2013, 2.0), 4)
    0.618
    >>> lee_clifton_risk([1, 2, 3, 10], np.mean, 2.2013, [0.5, 2.0]).round(4).tolist()
    [0.3318, 0.618]
    """
    beliefs = possible_world_beliefs(universe, query, response, epsilon, sensitivity)
    return _as_float_or_array(beliefs.max("world").values)


def _worst_case_from_worlds(worlds: PossibleWorlds, eps: np.ndarray, prior) -> np.ndarray:
    w = _world_prior(prior, worlds.n)
    d = worlds.distances
    # sup over responses of beta(w_i) is attained at response = f(w_i) (triangle inequality)
    den = np.einsum("k,eik->ei", w, np.exp(-eps[:, None, None] * d[None] / worlds.sensitivity))
    return np.max(w[None, :] / den, axis=1)


def lee_clifton_worst_case_belief(
    universe: Sequence | np.ndarray,
    query: Callable,
    epsilon: float | Sequence[float] | np.ndarray,
    sensitivity: float | None = None,
    *,
    prior: Sequence[float] | np.ndarray | None = None,
) -> float | np.ndarray:
    """Largest belief any response can give the adversary in any world (eq. 19).

    ``max_i 1 / (1 + sum_{k != i} exp(-||f(w_i) - f(w_k)||_1 eps / Delta f))``: by the
    triangle inequality the supremum over responses of ``beta(w_i)`` is attained at
    ``response = f(w_i)`` (Lee & Clifton eqs. 1-3), so this bound is exact, unlike the
    ``Delta v`` bound of eq. (5).

    Parameters
    ----------
    universe, query, sensitivity, prior
        As in :func:`possible_world_beliefs`.
    epsilon : float or 1-D array_like
        DP epsilon(s).

    Returns
    -------
    float or numpy.ndarray
        E.g. 0.3292 for the school-year mean at eps = 0.5 (the paper's eq. 12).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, eqs. (1)-(3), (10)-(12),
       (19)-(21).

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import lee_clifton_worst_case_belief
    >>> round(lee_clifton_worst_case_belief([1, 2, 3, 4], np.mean, 0.5), 4)  # eq. (12)
    0.3292
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    eps = np.asarray(epsilon, dtype=float)
    if eps.ndim > 1 or np.any(~(eps >= 0)):
        raise ValueError("`epsilon` must be a non-negative scalar or 1-D array.")
    out = _worst_case_from_worlds(worlds, np.atleast_1d(eps), prior)
    return float(out[0]) if eps.ndim == 0 else out


def lee_clifton_epsilon_bound(delta_f: float, delta_v: float, n: int, rho: float) -> float:
    """Largest epsilon guaranteed by Lee & Clifton's bound (eq. 7).

    ``eps <= (Delta f / Delta v) ln((n - 1) rho / (1 - rho))`` keeps the adversary's
    belief in any of the n possible worlds at most ``rho``, whatever the response. The
    bound replaces every distance between worlds by the largest, ``Delta v``, so it is
    sufficient, not necessary; :func:`lee_clifton_max_epsilon` finds the exact value.

    Parameters
    ----------
    delta_f : float
        Sensitivity of the query.
    delta_v : float
        Largest distance between the query values of two possible worlds.
    n : int
        Number of possible worlds (records in the universe).
    rho : float
        Tolerated probability of identifying the missing record, ``1/n <= rho < 1``.

    Returns
    -------
    float
        E.g. ``17/18 ln(3/2) = 0.3829`` (mean of absence days), ``5/6 ln(3/2) = 0.3379``
        (school year), ``4 ln(3/2) = 1.6219`` (median of absence days).

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). *ISC 2011*, LNCS 7001, eqs. (6)-(9), (16)-(18).

    Examples
    --------
    >>> from pymc_edp.risk import lee_clifton_epsilon_bound
    >>> round(lee_clifton_epsilon_bound(17 / 6, 3.0, n=4, rho=1 / 3), 4)  # mean, absence days
    0.3829
    >>> round(lee_clifton_epsilon_bound(4.0, 1.0, n=4, rho=1 / 3), 4)  # median
    1.6219
    """
    n = _check_int_scalar(n, "n", 2)
    if not (delta_f > 0 and delta_v > 0):
        raise ValueError("`delta_f` and `delta_v` must be > 0.")
    if not (1.0 / n <= rho < 1.0):
        raise ValueError(
            f"`rho` must lie in [1/n, 1) = [{1.0 / n:.4g}, 1): below 1/n no epsilon >= 0 "
            "can keep the belief that low."
        )
    return float(delta_f / delta_v * math.log((n - 1) * rho / (1.0 - rho)))


def lee_clifton_max_epsilon(
    universe: Sequence | np.ndarray,
    query: Callable,
    rho: float,
    *,
    sensitivity: float | None = None,
    prior: Sequence[float] | np.ndarray | None = None,
    tol: float = 1e-12,
) -> float:
    """Largest epsilon whose worst-case belief is at most ``rho`` (binary search).

    The worst-case belief (:func:`lee_clifton_worst_case_belief`) increases with epsilon,
    so the largest admissible epsilon is found by bisection (Lee & Clifton Sec. 5.2). The
    search starts from the closed-form bound (eq. 7), which is always admissible, and
    doubles an upper end until it is not.

    Parameters
    ----------
    universe, query, sensitivity, prior
        As in :func:`possible_world_beliefs`.
    rho : float
        Tolerated belief, at least the largest prior weight (``1/n`` for uniform).
    tol : float, default 1e-12
        Relative width of the final bracket.

    Returns
    -------
    float
        The largest admissible epsilon; ``inf`` if even a noiseless release keeps every
        belief at most ``rho`` (worlds that share a query value cannot be told apart).
        E.g. ``4 ln 2 = 2.7726`` for the median of absence days at ``rho = 1/3``.

    References
    ----------
    .. [1] Lee, J. and Clifton, C. (2011). "How Much Is Enough? Choosing epsilon for
       Differential Privacy." *ISC 2011*, LNCS 7001, Sec. 5.2 and 6.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import lee_clifton_max_epsilon
    >>> round(lee_clifton_max_epsilon([1, 2, 3, 10], np.median, 1 / 3), 4)  # 4 ln 2
    2.7726
    >>> round(lee_clifton_max_epsilon([1, 2, 3, 10], np.mean, 1 / 3), 4)  # eq. (7) gives 0.3829
    0.4317
    """
    worlds = possible_worlds(universe, query, sensitivity=sensitivity)
    w = _world_prior(prior, worlds.n)
    if not (w.max() <= rho < 1.0):
        raise ValueError(
            f"`rho` must lie in [max prior weight, 1) = [{w.max():.4g}, 1): even eps = 0 "
            "leaves the adversary's prior belief above rho."
        )
    d = worlds.distances
    limit = np.max(w / np.array([w[d[i] == 0].sum() for i in range(worlds.n)]))
    if limit <= rho:
        return math.inf

    def worst(e: float) -> float:
        return float(_worst_case_from_worlds(worlds, np.array([e]), prior)[0])

    lo = 0.0
    if prior is None and worlds.delta_v > 0:
        lo = max(0.0, lee_clifton_epsilon_bound(worlds.sensitivity, worlds.delta_v, worlds.n, rho))
    hi = max(2.0 * lo, 1.0)
    while worst(hi) <= rho:
        lo, hi = hi, 2.0 * hi
    for _ in range(200):
        if hi - lo <= tol * hi:
            break
        mid = 0.5 * (lo + hi)
        if worst(mid) > rho:
            hi = mid
        else:
            lo = mid
    return lo


# --------------------------------------------------------------------------------------
# Bailie & Gong: DP as an interval of measures
# --------------------------------------------------------------------------------------
@dataclass(frozen=True)
class DensityBounds:
    """Lower and upper bounds on a density or probability, pointwise.

    Attributes
    ----------
    lower, upper : numpy.ndarray
        Bounds of equal shape, ``lower <= upper``.

    Examples
    --------
    >>> import numpy as np
    >>> from pymc_edp.risk import DensityBounds
    >>> bounds = DensityBounds(lower=np.array([0.1, 0.2]), upper=np.array([0.3, 0.4]))
    >>> bounds.upper.tolist()
    [0.3, 0.4]
    >>> bounds.contains([0.2, 0.4]), bounds.contains([0.2, 0.5])
    (True, False)
    """

    lower: np.ndarray
    upper: np.ndarray

    def contains(self, values, *, rtol: float = 1e-12) -> bool:
        """Whether every value lies within the bounds (with relative slack ``rtol``)."""
        v = np.asarray(values, dtype=float)
        return bool(np.all(v >= self.lower * (1 - rtol)) and np.all(v <= self.upper * (1 + rtol)))


def _check_eps_d(epsilon, d_star_star) -> tuple[np.ndarray, np.ndarray]:
    eps = np.asarray(epsilon, dtype=float)
    d = np.asarray(d_star_star, dtype=float)
    if np.any(~(eps >= 0)) or np.any(~(d >= 0)):
        raise ValueError("`epsilon` and `d_star_star` must be >= 0.")
    return eps, d


def bailie_gong_posterior_bounds(
    prior: float | np.ndarray,
    epsilon: float,
    d_star_star: float,
) -> DensityBounds:
    """Bounds on any posterior after an epsilon-DP release (Bailie & Gong).

    ``pi(theta | t)`` lies in ``pi(theta) exp(+-eps d**)`` for every parameter value,
    every data model and every proper prior, where ``d** = sup d(x, x')`` over the data
    sets x, x' the release t could have come from.

    Parameters
    ----------
    prior : float or array_like
        Prior density or probability ``pi(theta)`` at the parameter values of interest.
    epsilon : float
        DP epsilon of the mechanism.
    d_star_star : float
        Diameter of ``supp(x | t)`` in the DP metric (e.g. n for binary vectors of length
        n under the Hamming distance).

    Returns
    -------
    DensityBounds
        ``lower = prior exp(-eps d**)``, ``upper = prior exp(eps d**)``. (For a probability
        the upper bound may exceed 1; it is the theorem's bound, not clipped.)

    References
    ----------
    .. [1] Bailie, J. and Gong, R. "Differential Privacy: General Inferential Limits via
       Intervals of Measures." Theorem (posterior bounds).

    Examples
    --------
    >>> from pymc_edp.risk import bailie_gong_posterior_bounds
    >>> bounds = bailie_gong_posterior_bounds(0.5, epsilon=0.1, d_star_star=3)
    >>> round(float(bounds.lower), 4), round(float(bounds.upper), 4)
    (0.3704, 0.6749)
    >>> bounds.contains(0.6), bounds.contains(0.7)
    (True, False)
    """
    eps, d = _check_eps_d(epsilon, d_star_star)
    p = np.asarray(prior, dtype=float)
    factor = np.exp(eps * d)
    return DensityBounds(lower=p / factor, upper=p * factor)


def hamming_distances(datasets: Sequence | np.ndarray) -> np.ndarray:
    """Pairwise Hamming distances between equal-length datasets (rows of ``datasets``).

    Parameters
    ----------
    datasets : array_like, shape (m, n) or (m, n, ...)
        m datasets of n records each.

    Returns
    -------
    numpy.ndarray
        ``(m, m)`` integer matrix of the number of records that differ.

    Examples
    --------
    >>> from pymc_edp.risk import hamming_distances
    >>> hamming_distances([[0, 0], [0, 1], [1, 0], [1, 1]]).tolist()
    [[0, 1, 1, 2], [1, 0, 2, 1], [1, 2, 0, 1], [2, 1, 1, 0]]
    """
    x = np.asarray(datasets)
    x = x.reshape(x.shape[0], x.shape[1], -1)
    return np.any(x[:, None] != x[None, :], axis=3).sum(axis=2)


def bailie_gong_prior_predictive_bounds(
    densities: np.ndarray,
    distances: np.ndarray,
    epsilon: float,
) -> DensityBounds:
    """Bounds on the prior predictive density of an epsilon-DP release (Bailie & Gong).

    For any data model and prior supported on the datasets ``x_1..x_m``,

        max_k exp(-eps d*_k) p_{x_k}(t) <= p(t) <= min_k exp(eps d*_k) p_{x_k}(t),

    with ``d*_k = max_l d(x_k, x_l)``; the same interval bounds the marginal likelihood
    ``p(t | theta)`` when the datasets are ``supp(x | t, theta)``.

    Parameters
    ----------
    densities : array_like, shape (m, T)
        Mechanism density (or pmf) ``p_{x_k}(t)`` of each candidate dataset (rows) at each
        release t (columns).
    distances : array_like, shape (m, m)
        DP-metric distances between the candidate datasets (e.g. :func:`hamming_distances`).
    epsilon : float
        DP epsilon of the mechanism.

    Returns
    -------
    DensityBounds
        Bounds of shape ``(T,)``.

    References
    ----------
    .. [1] Bailie, J. and Gong, R. "Differential Privacy: General Inferential Limits via
       Intervals of Measures." Theorems (bounds on the privatised data probability; prior
       predictive bounds).

    Examples
    --------
    The sum of two binary records released with Laplace noise (eps = 0.5), evaluated at
    t = 0, 1, 2; the uniform prior's predictive density lies within the bounds:

    >>> import numpy as np
    >>> from pymc_edp.calibration import laplace_mechanism
    >>> from pymc_edp.risk import bailie_gong_prior_predictive_bounds, hamming_distances
    >>> datasets = np.array([[0, 0], [0, 1], [1, 0], [1, 1]])
    >>> mech = laplace_mechanism(epsilon=0.5, sensitivity=1.0)
    >>> dens = mech.density_matrix(datasets.sum(axis=1), [0.0, 1.0, 2.0]).values
    >>> bounds = bailie_gong_prior_predictive_bounds(dens, hamming_distances(datasets), 0.5)
    >>> bounds.lower.round(4).tolist(), bounds.upper.round(4).tolist()
    ([0.092, 0.092, 0.092], [0.25, 0.4122, 0.25])
    >>> bounds.contains(dens.mean(axis=0))
    True
    """
    p = np.asarray(densities, dtype=float)
    d = np.asarray(distances, dtype=float)
    if p.ndim != 2 or d.shape != (p.shape[0], p.shape[0]):
        raise ValueError("Need `densities` of shape (m, T) and `distances` of shape (m, m).")
    if np.any(p < 0) or np.any(d < 0):
        raise ValueError("`densities` and `distances` must be non-negative.")
    eps, _ = _check_eps_d(epsilon, 0.0)
    d_star = d.max(axis=1)[:, None]
    return DensityBounds(
        lower=np.max(np.exp(-eps * d_star) * p, axis=0),
        upper=np.min(np.exp(eps * d_star) * p, axis=0),
    )


def bailie_gong_power_bound(
    alpha: float | np.ndarray,
    epsilon: float | np.ndarray,
    d_star_star: float | np.ndarray,
) -> float | np.ndarray:
    """Largest power of a level-alpha test from an epsilon-DP release (Bailie & Gong).

    Testing ``theta_0`` against ``theta_1`` from a release of an epsilon-DP mechanism, any
    level-alpha test has power at most ``alpha exp(d** eps)`` (capped at 1), where ``d**``
    is the largest distance between datasets supported under the two hypotheses. It
    generalises Wasserman & Zhou (2010) beyond i.i.d. records.

    Parameters
    ----------
    alpha : float or array_like
        Test level(s) in [0, 1].
    epsilon : float or array_like
        DP epsilon.
    d_star_star : float or array_like
        ``sup d(x, x')`` over ``x in supp(x | t, theta_0)``, ``x' in supp(x | t, theta_1)``.

    Returns
    -------
    float or numpy.ndarray
        ``min(1, alpha exp(d** eps))``.

    References
    ----------
    .. [1] Bailie, J. and Gong, R. "Differential Privacy: General Inferential Limits via
       Intervals of Measures." Theorem (Neyman-Pearson hypothesis testing).

    Examples
    --------
    >>> from pymc_edp.risk import bailie_gong_power_bound
    >>> round(bailie_gong_power_bound(0.05, epsilon=0.5, d_star_star=1), 4)
    0.0824
    >>> bailie_gong_power_bound(0.05, [0.5, 1.0, 5.0], 1).round(4).tolist()
    [0.0824, 0.1359, 1.0]
    """
    a = np.asarray(alpha, dtype=float)
    if np.any(~((a >= 0) & (a <= 1))):
        raise ValueError("`alpha` must lie in [0, 1].")
    eps, d = _check_eps_d(epsilon, d_star_star)
    return _as_float_or_array(np.minimum(1.0, a * np.exp(d * eps)))
