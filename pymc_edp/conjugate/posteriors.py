"""Exact B-EDP-epsilon of conjugate posteriors: the oracles the sampled audit is tested on.

Every neighbour's posterior is integrated exactly over B bins of equal posterior probability
(Charest & Han 2017, eq. 2), in log space from whichever tail avoids cancellation, so tail
bins keep full relative precision; the bins' own masses come from the same edges, not
``1/B``, so quantile round-off cannot leak into epsilon.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import numpy as np
import xarray as xr
from scipy import special, stats

from pymc_edp.base.validate import check_choice

__all__ = [
    "beta_binomial_edp",
    "beta_binomial_synthesizer_matrix",
    "dirichlet_multinomial_log_pmf",
    "normal_normal_edp",
    "normal_normal_posterior",
    "poisson_gamma_edp",
]

Neighbour = Literal["remove", "replace"]

# Elements per chunk in the Normal-Normal kernel: (records x replacements x edges) floats.
_CHUNK_ELEMENTS = 1 << 21


def _log1mexp(d: np.ndarray) -> np.ndarray:
    """``log(1 - exp(d))`` for ``d <= 0``, accurate on the whole range (Mächler 2012)."""
    d = np.asarray(d, dtype=float)
    out = np.empty_like(d)
    near = d > -np.log(2.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        out[near] = np.log(-np.expm1(d[near]))
        out[~near] = np.log1p(-np.exp(d[~near]))
    return out


def _log_interval_mass(log_cdf: np.ndarray, log_sf: np.ndarray) -> np.ndarray:
    """Log masses between consecutive edges (last axis), given ``log F`` and ``log S`` there.

    ``F(hi) - F(lo)`` in the lower tail, else ``S(lo) - S(hi)``.
    """
    log_cdf_lo, log_cdf_hi = log_cdf[..., :-1], log_cdf[..., 1:]
    log_sf_lo, log_sf_hi = log_sf[..., :-1], log_sf[..., 1:]
    with np.errstate(invalid="ignore"):
        via_cdf = log_cdf_hi + _log1mexp(log_cdf_lo - log_cdf_hi)
        via_sf = log_sf_lo + _log1mexp(log_sf_hi - log_sf_lo)
    out = np.where(log_cdf_hi < log_sf_lo, via_cdf, via_sf)
    # Both ends at -inf on the chosen side (an empty interval) give nan above: mass 0.
    return np.where(np.isnan(out), -np.inf, out)


def _max_abs_log_ratio(log_p: np.ndarray, log_q: np.ndarray, axis=-1) -> np.ndarray:
    """``max |log p - log q|`` along ``axis``; a bin with zero mass under both counts as 0."""
    with np.errstate(invalid="ignore"):
        diff = np.abs(log_p - log_q)
    both_zero = np.isneginf(log_p) & np.isneginf(log_q)
    diff = np.where(both_zero, 0.0, diff)
    return np.max(diff, axis=axis)


def _as_bins(bins: int | Sequence[int]) -> tuple[np.ndarray, bool]:
    """The bin counts as an int array, and whether ``bins`` was a scalar."""
    arr = np.asarray(bins)
    scalar = arr.ndim == 0
    arr = np.atleast_1d(arr)
    if arr.ndim != 1 or arr.size == 0:
        raise ValueError("`bins` must be a positive integer or a 1-D sequence of them.")
    if not np.issubdtype(arr.dtype, np.integer):
        if not np.all(np.isfinite(arr)) or np.any(arr != np.round(arr)):
            raise ValueError(f"`bins` must hold integers, got {bins!r}.")
    if np.any(arr < 1):
        raise ValueError(f"`bins` must be >= 1, got {bins!r}.")
    return arr.astype(np.int64), scalar


def _check_replacements(neighbour: str, replacements) -> None:
    """Refuse ``replacements`` with ``"remove"``, and their absence with ``"replace"``."""
    check_choice(neighbour, "neighbour", ("remove", "replace"))
    if neighbour == "remove" and replacements is not None:
        raise ValueError("`replacements` is only used with neighbour='replace'.")
    if neighbour == "replace" and replacements is None:
        raise ValueError("neighbour='replace' needs `replacements`.")


def _check_beta_prior(alpha, beta) -> None:
    if not (alpha > 0 and beta > 0 and np.isfinite(alpha) and np.isfinite(beta)):
        raise ValueError(f"`alpha` and `beta` must be finite and > 0, got {alpha}, {beta}.")


def _epsilon(out: np.ndarray, scalar: bool, pointwise: bool) -> float | np.ndarray:
    """From per-record epsilons ``(n, len(bins))``: them, or their maximum, per ``bins``."""
    if pointwise:
        return out[:, 0] if scalar else out
    eps = out.max(axis=0)
    return float(eps[0]) if scalar else eps


def _transition(log_pmf: np.ndarray, log: bool, coords, attrs: dict) -> xr.DataArray:
    """The ``(x, x_synthetic)`` transition matrix from its log, or the log itself."""
    return xr.DataArray(
        log_pmf if log else np.exp(log_pmf),
        dims=("x", "x_synthetic"),
        coords=coords,
        name="log_transition" if log else "transition",
        attrs=attrs,
    )


def _beta_quantiles(a: float, b: float, q: np.ndarray) -> np.ndarray:
    """Quantiles of Beta(a, b), the upper half computed by symmetry for accuracy."""
    q = np.asarray(q, dtype=float)
    upper = q > 0.5
    out = np.empty_like(q)
    out[~upper] = special.betaincinv(a, b, q[~upper])
    out[upper] = 1.0 - special.betaincinv(b, a, 1.0 - q[upper])
    return out


def _beta_log_bin_probs(edges: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Log P(edges[j] < p <= edges[j+1]) under Beta(a, b); broadcasts ``a``, ``b`` on axis 0."""
    a = np.asarray(a, dtype=float)[..., None]
    b = np.asarray(b, dtype=float)[..., None]
    with np.errstate(divide="ignore"):
        log_cdf = np.log(special.betainc(a, b, edges))
        log_sf = np.log(special.betaincc(a, b, edges))
    return _log_interval_mass(log_cdf, log_sf)


def beta_binomial_edp(
    n: int,
    x: int,
    alpha: float,
    beta: float,
    bins: int | Sequence[int],
    neighbour: Neighbour = "replace",
) -> float | np.ndarray:
    """Exact B-EDP-epsilon of the posterior ``Beta(alpha + x, beta + n - x)`` of p.

    ``max |log P(p in b_j | D') - log P(p in b_j | D)|`` over the B equal-probability bins
    ``b_j`` of the posterior and the neighbours D' of ``x`` successes in ``n`` records.

    Parameters
    ----------
    n, x : int
        Records (>= 1) and successes (``0 <= x <= n``).
    alpha, beta : float
        The Beta prior (> 0).
    bins : int or sequence of int
        Number(s) of equal-probability bins B; a sequence gives an array of epsilons.
    neighbour : {"replace", "remove"}
        ``"replace"`` (bounded DP, Table 2 of [1]_): a 0 becomes a 1 or a 1 a 0.
        ``"remove"`` (unbounded DP): a 1 or a 0 is deleted. The worst case is taken.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), eq. (2),
       Table 2.

    Examples
    --------
    >>> round(beta_binomial_edp(5, 0, 0.5, 0.5, bins=5), 4)  # Charest & Han, Table 2: 4.01
    4.0066
    >>> round(beta_binomial_edp(5, 0, 0.5, 0.5, bins=5, neighbour="remove"), 4)
    0.218
    >>> beta_binomial_edp(5, 0, 0.5, 0.5, bins=[2, 5, 10]).round(4).tolist()
    [2.09, 4.0066, 5.4039]
    """
    check_choice(neighbour, "neighbour", ("remove", "replace"))
    n_int, x_int = int(n), int(x)
    if n_int != n or x_int != x or n_int < 1 or not 0 <= x_int <= n_int:
        raise ValueError(f"Need integers n >= 1 and 0 <= x <= n, got n={n!r}, x={x!r}.")
    _check_beta_prior(alpha, beta)
    b_arr, scalar = _as_bins(bins)

    # Posterior parameters (a', b') of every neighbour D'.
    if neighbour == "replace":
        xs = [xp for xp in (x_int - 1, x_int + 1) if 0 <= xp <= n_int]
        a_nb = np.array([alpha + xp for xp in xs])
        b_nb = np.array([beta + n_int - xp for xp in xs])
    else:
        pairs = []
        if x_int >= 1:  # a 1 is deleted
            pairs.append((alpha + x_int - 1, beta + n_int - x_int))
        if x_int < n_int:  # a 0 is deleted
            pairs.append((alpha + x_int, beta + n_int - 1 - x_int))
        a_nb, b_nb = (np.array(v) for v in zip(*pairs, strict=True))

    a_post, b_post = alpha + x_int, beta + n_int - x_int
    out = np.empty(b_arr.size)
    for k, n_bins in enumerate(b_arr):
        edges = _beta_quantiles(a_post, b_post, np.arange(n_bins + 1) / n_bins)
        base = _beta_log_bin_probs(edges, a_post, b_post)
        other = _beta_log_bin_probs(edges, a_nb, b_nb)
        out[k] = np.max(_max_abs_log_ratio(other, base[None, :]))
    return float(out[0]) if scalar else out


def dirichlet_multinomial_log_pmf(a: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Dirichlet-Multinomial log pmf ``(R, C)``, accurate for tiny and for huge parameters.

    Parameters
    ----------
    a : numpy.ndarray, shape (R, K)
        Dirichlet parameters of each row (> 0).
    counts : numpy.ndarray, shape (C, K)
        Outcome counts, every row summing to the same ``n_s``.

    Notes
    -----
    ``gammaln(a + c) - gammaln(a)`` cancels catastrophically when ``a`` is huge (tiny
    epsilon: ``a ~ n_s / eps``). Instead the pmf is a product of ratios in (0, 1],
    ``prod_k prod_{i < c_k} (a_k + i) / (A + i)``, times
    ``prod_k prod_{i < c_k} (1 + i / A) / prod_{l < n_s} (1 + l / A)`` (``A = sum_k a_k``),
    each factor to full relative precision.

    Examples
    --------
    >>> from scipy import stats
    >>> counts = np.array([[0, 3], [1, 2], [2, 1], [3, 0]])
    >>> p = np.exp(dirichlet_multinomial_log_pmf(np.array([[0.5, 1.5]]), counts))[0]
    >>> bool(np.allclose(p, stats.betabinom.pmf([0, 1, 2, 3], 3, 0.5, 1.5)))
    True
    """
    a = np.asarray(a, dtype=float)
    counts = np.asarray(counts, dtype=np.intp)
    n_s = int(counts[0].sum())
    total = a.sum(axis=1)
    i = np.arange(n_s, dtype=float)
    ratios = np.log((a[:, :, None] + i) / (total[:, None, None] + i))  # (R, K, n_s)
    g = np.concatenate([np.zeros((*a.shape, 1)), np.cumsum(ratios, axis=2)], axis=2)
    h = np.concatenate(
        [np.zeros((a.shape[0], 1)), np.cumsum(np.log1p(i / total[:, None]), axis=1)], axis=1
    )  # (R, n_s + 1)
    k = np.arange(a.shape[1])[None, :]
    log_coef = special.gammaln(n_s + 1) - special.gammaln(counts + 1).sum(axis=1)
    return (
        log_coef[None, :]
        + g[:, k, counts].sum(axis=2)
        + h[:, counts].sum(axis=2)
        - h[:, n_s][:, None]
    )


def beta_binomial_synthesizer_matrix(
    n: int,
    alpha: float,
    beta: float,
    n_synthetic: int | None = None,
    *,
    log: bool = False,
) -> xr.DataArray:
    """Transition matrix ``P(x_synthetic | x)`` of the Beta-Binomial synthesizer.

    The synthesizer is :class:`~pymc_edp.conjugate.BetaBinomialSynthesizer` (``n_synthetic``
    defaults to ``n``); ``log=True`` gives log-probabilities (no underflow for large ``n_s``).

    Returns
    -------
    xarray.DataArray
        Dims ``("x", "x_synthetic")``, rows summing to 1; its DP epsilon
        (:func:`pymc_edp.risk.dp_epsilon`) is ``log(1 + n_s / min(alpha, beta))``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). *J. Privacy and Confidentiality* 7(3), Sec. 3.1,
       Table 1.
    .. [2] Abowd, J. M. and Vilhuber, L. (2008). *Privacy in Statistical Databases*, 239-246.

    Examples
    --------
    >>> from pymc_edp.risk import dp_epsilon
    >>> t = beta_binomial_synthesizer_matrix(5, 0.5, 0.5)  # Charest & Han, Table 1
    >>> t.dims, t.shape
    (('x', 'x_synthetic'), (6, 6))
    >>> t.sel(x=0).round(6).values.tolist()  # first row of Table 1
    [0.715975, 0.188415, 0.066499, 0.022166, 0.005968, 0.000977]
    >>> round(dp_epsilon(t), 4), round(float(np.log(11)), 4)
    (2.3979, 2.3979)
    """
    n_s = n if n_synthetic is None else n_synthetic
    if int(n) != n or n < 0 or int(n_s) != n_s or n_s < 0:
        raise ValueError(f"`n` and `n_synthetic` must be integers >= 0, got {n!r}, {n_s!r}.")
    _check_beta_prior(alpha, beta)
    n, n_s = int(n), int(n_s)
    x = np.arange(n + 1, dtype=float)
    k = np.arange(n_s + 1)
    # products of ratios, not betaln differences: finite for tiny alpha or beta (large
    # epsilon), precise for huge ones (tiny epsilon); see dirichlet_multinomial_log_pmf
    a = np.column_stack([alpha + x, beta + (n - x)])
    log_pmf = dirichlet_multinomial_log_pmf(a, np.column_stack([k, n_s - k]))
    coords = {"x": np.arange(n + 1), "x_synthetic": np.arange(n_s + 1)}
    attrs = {"alpha": float(alpha), "beta": float(beta), "n": n, "n_synthetic": n_s}
    return _transition(log_pmf, log, coords, attrs)


def _gamma_log_bin_probs(edges: np.ndarray, shape: np.ndarray, rate: float) -> np.ndarray:
    """Log P(edges[j] < lam <= edges[j+1]) under Gamma(shape, rate); ``shape`` on axis 0."""
    a = np.asarray(shape, dtype=float)[..., None]
    x = edges * rate
    log_cdf = stats.gamma.logcdf(x, a)
    log_sf = stats.gamma.logsf(x, a)
    return _log_interval_mass(log_cdf, log_sf)


def poisson_gamma_edp(
    y: np.ndarray | Sequence[float],
    alpha: float,
    beta: float,
    bins: int | Sequence[int],
    neighbour: Neighbour = "replace",
    replacements: np.ndarray | Sequence[float] | None = None,
    pointwise: bool = False,
) -> float | np.ndarray:
    """Exact B-EDP-epsilon of the Poisson-Gamma posterior of the rate.

    Model: ``y_i ~ Poisson(lam)``, prior ``lam ~ Gamma(alpha, beta)`` (shape, rate). The
    posterior is ``Gamma(alpha + sum y, beta + n)``; a neighbour's is
    ``Gamma(alpha + sum y - y_i + y', beta + n)`` when ``y_i`` is replaced by ``y'`` and
    ``Gamma(alpha + sum y - y_i, beta + n - 1)`` when it is removed.

    Parameters
    ----------
    y : array_like of int, shape (n,)
        Observed counts.
    alpha, beta : float
        Shape and rate of the Gamma prior.
    bins, neighbour, pointwise
        As in :func:`normal_normal_edp`.
    replacements : array_like, optional
        For ``"replace"``: candidate values tried for every record (shape ``(k,)``), or per
        record (shape ``(n, k)``); the worst case over them is taken.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), eq. (2).

    Examples
    --------
    Ten counts near 3; replacing a record by 0 or by 30 (bounded DP) moves the posterior
    of the rate far out of its own bulk:

    >>> y = np.array([2, 3, 4, 3, 1, 5, 3, 2, 4, 3])
    >>> round(poisson_gamma_edp(y, 2.0, 1.0, bins=20, replacements=[0, 30]), 3)
    20.526
    >>> poisson_gamma_edp(y, 2.0, 1.0, bins=20, replacements=[0, 30], pointwise=True).shape
    (10,)
    """
    _check_replacements(neighbour, replacements)
    y = np.asarray(y, dtype=float).ravel()
    if y.size == 0 or np.any(y < 0) or np.any(y != np.round(y)):
        raise ValueError("`y` must hold at least one non-negative integer count.")
    if not (alpha > 0 and beta > 0):
        raise ValueError("`alpha` and `beta` must be positive.")
    n = y.size
    b_arr, scalar = _as_bins(bins)
    shape, rate = alpha + y.sum(), beta + n
    if neighbour == "remove":
        shape_nb = (shape - y)[:, None]
        rate_nb = rate - 1.0
    else:
        rep = np.asarray(replacements, dtype=float)
        rep = np.broadcast_to(rep if rep.ndim == 2 else rep.reshape(1, -1), (n, rep.shape[-1]))
        if np.any(rep < 0) or np.any(rep != np.round(rep)):
            raise ValueError("`replacements` must be non-negative integer counts.")
        shape_nb = shape - y[:, None] + rep
        rate_nb = rate
    out = np.empty((n, b_arr.size))
    for m, n_bins in enumerate(b_arr):
        q = np.arange(1, n_bins) / n_bins
        edges = np.concatenate([[0.0], stats.gamma.ppf(q, shape) / rate, [np.inf]])
        base = _gamma_log_bin_probs(edges, np.array(shape), rate)
        other = _gamma_log_bin_probs(edges[None, :], shape_nb, rate_nb)
        out[:, m] = np.max(_max_abs_log_ratio(other, base[None, None, :]), axis=1)
    return _epsilon(out, scalar, pointwise)


def _normal_posterior(y, sig, mu0, sigma0) -> tuple[float, float]:
    """Posterior mean and precision of mu."""
    prec = 1.0 / sigma0**2 + np.sum(1.0 / sig**2)
    return (mu0 / sigma0**2 + np.sum(y / sig**2)) / prec, prec


def _normal_inputs(y, sigma, mu0, sigma0) -> tuple[np.ndarray, np.ndarray]:
    """``y`` and ``sigma`` broadcast to it, as floats, checked."""
    y = np.asarray(y, dtype=float)
    if y.ndim != 1:
        raise ValueError(f"`y` must be 1-D, got shape {y.shape}.")
    sig = np.broadcast_to(np.asarray(sigma, dtype=float), y.shape)
    if not np.all(np.isfinite(y)):
        raise ValueError("`y` must be finite.")
    if np.any(~(sig > 0)) or np.any(~np.isfinite(sig)):
        raise ValueError("`sigma` must be finite and > 0.")
    if not (sigma0 > 0 and np.isfinite(sigma0) and np.isfinite(mu0)):
        raise ValueError(f"Need finite mu0 and sigma0 > 0, got {mu0}, {sigma0}.")
    return y, sig


def normal_normal_posterior(
    y: np.ndarray | Sequence[float],
    sigma: float | np.ndarray,
    mu0: float,
    sigma0: float,
) -> tuple[float, float]:
    """Posterior mean and sd of mu for ``y_i ~ N(mu, sigma_i^2)``, ``mu ~ N(mu0, sigma0^2)``.

    ``sigma`` (a scalar or one per observation) and ``sigma0`` are standard deviations, not
    variances. For a common sigma, ``mu_1 = (sigma^2 mu0 + sigma0^2 sum y) / (sigma^2 + n
    sigma0^2)`` and ``sigma_1^2 = sigma0^2 sigma^2 / (n sigma0^2 + sigma^2)``.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), Sec. 3.3.

    Examples
    --------
    >>> normal_normal_posterior([1.0, 2.0, 3.0], sigma=1.0, mu0=0.0, sigma0=1.0)
    (1.5, 0.5)
    """
    mean, prec = _normal_posterior(*_normal_inputs(y, sigma, mu0, sigma0), mu0, sigma0)
    return float(mean), float(1.0 / np.sqrt(prec))


def _normal_log_bin_probs(z_edges: np.ndarray) -> np.ndarray:
    """Log standard-normal mass between consecutive standardised edges (last axis)."""
    return _log_interval_mass(special.log_ndtr(z_edges), special.log_ndtr(-z_edges))


def normal_normal_edp(
    y: np.ndarray | Sequence[float],
    sigma: float | np.ndarray,
    mu0: float,
    sigma0: float,
    bins: int | Sequence[int],
    neighbour: Neighbour = "remove",
    replacements: np.ndarray | Sequence[float] | None = None,
    pointwise: bool = False,
) -> float | np.ndarray:
    """Exact B-EDP-epsilon of the posterior of mu (model of :func:`normal_normal_posterior`).

    Parameters
    ----------
    y, sigma, mu0, sigma0
        As in :func:`normal_normal_posterior` (Charest & Han: ``sigma^2 = 5``,
        ``sigma0^2 = 3``).
    bins : int or sequence of int
        Number(s) of equal-probability bins B.
    neighbour : {"remove", "replace"}
        ``"remove"``: D' deletes record i (Charest & Han's study); ``"replace"``: D'
        replaces ``y_i`` by each of ``replacements[i]`` (shape ``(n,)`` or ``(n, k)``, a
        scalar for every record), taking the worst case.
    pointwise : bool, default False
        Return the per-record epsilons instead of their maximum.

    Returns
    -------
    float or numpy.ndarray
        Epsilon: a float, or one per ``bins`` if a sequence; with ``pointwise``, shape
        ``(n,)`` or ``(n, len(bins))``.

    Notes
    -----
    The shift of the posterior mean is computed in closed form, ``(y_i - mu_1) /
    (sigma_i^2 tau_{-i})`` for removal (``tau_{-i}`` the neighbour's posterior precision)
    and ``(y' - y_i) / (sigma_i^2 tau)`` for replacement, so no precision is lost to
    subtracting nearly equal posterior means when n is large.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), eq. (2),
       Sec. 3.3, Figure 2.

    Examples
    --------
    Charest & Han's setting: ``sigma^2 = 5``, prior ``N(10, 3)``, n = 100 records.

    >>> y = np.random.default_rng(0).normal(10, 5**0.5, 100)
    >>> round(normal_normal_edp(y, 5**0.5, 10, 3**0.5, bins=10), 4)
    0.4324
    >>> normal_normal_edp(y, 5**0.5, 10, 3**0.5, bins=[5, 10, 20]).round(4).tolist()
    [0.3516, 0.4324, 0.5009]
    >>> per_record = normal_normal_edp(y, 5**0.5, 10, 3**0.5, bins=10, pointwise=True)
    >>> per_record.shape, round(float(per_record.max()), 4)
    ((100,), 0.4324)
    """
    _check_replacements(neighbour, replacements)
    y, sig = _normal_inputs(y, sigma, mu0, sigma0)
    n = y.size
    if n == 0:
        raise ValueError("`y` must hold at least one observation.")
    b_arr, scalar = _as_bins(bins)

    var_i = sig**2
    mean, prec = _normal_posterior(y, sig, mu0, sigma0)
    sd = 1.0 / np.sqrt(prec)

    if neighbour == "remove":
        prec_nb = prec - 1.0 / var_i  # (n,)
        shift = ((y - mean) / (var_i * prec_nb))[:, None]  # mean_1 - mean_{-i}, (n, 1)
        sd_nb = (1.0 / np.sqrt(prec_nb))[:, None]
    else:
        rep = np.asarray(replacements, dtype=float)
        if rep.ndim == 0:
            rep = np.full((n, 1), float(rep))
        elif rep.ndim == 1:
            if rep.shape[0] != n:
                raise ValueError(f"`replacements` must have length n={n}, got {rep.shape}.")
            rep = rep[:, None]
        elif rep.ndim != 2 or rep.shape[0] != n:
            raise ValueError(f"`replacements` must have shape (n,) or (n, k), got {rep.shape}.")
        if rep.shape[1] == 0 or not np.all(np.isfinite(rep)):
            raise ValueError("`replacements` must be finite and non-empty.")
        shift = -(rep - y[:, None]) / (var_i[:, None] * prec)  # mean_1 - mean', (n, k)
        sd_nb = np.full((n, 1), sd)

    out = np.empty((n, b_arr.size))
    k = shift.shape[1]
    for m, n_bins in enumerate(b_arr):
        q = np.arange(n_bins + 1) / n_bins
        z = np.where(q > 0.5, -special.ndtri(1.0 - q), special.ndtri(q))  # (B+1,)
        base = _normal_log_bin_probs(z)
        chunk = max(1, _CHUNK_ELEMENTS // (k * (n_bins + 1)))
        for start in range(0, n, chunk):
            sl = slice(start, start + chunk)
            # Edge mean_1 + sd z, standardised under the neighbour posterior.
            z_nb = (
                z[None, None, :] * (sd / sd_nb[sl, :, None])
                + shift[sl, :, None] / sd_nb[sl, :, None]
            )
            other = _normal_log_bin_probs(z_nb)
            out[sl, m] = np.max(_max_abs_log_ratio(other, base[None, None, :]), axis=1)
    return _epsilon(out, scalar, pointwise)
