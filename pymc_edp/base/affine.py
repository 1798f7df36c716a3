"""Implicitly adaptive importance sampling by moment matching (NumPy kernel, sample axis last).

When reweighting ``u_s ~ p(u | D)`` towards ``p(u | D') ∝ p(u | D) r(u)`` fails (k-hat
too high), moment matching (Paananen et al.) moves the draws by affine maps ``T`` in the
unconstrained space to match weighted mean, variances and covariance, then recomputes the weights
``w(T u) ∝ p(T u | D) r(T u) / p(u | D)``; a map is kept only if it lowers k-hat. With
``split=True`` the final map moves half the draws, combined by multiple importance sampling
with ``q(x) = (p(x | D) + p(T^-1 x | D) |det T^-1|) / 2``.

Follows ``arviz_stats.loo_moment_match`` (and R's loo) step by step, so the k-hats agree,
except that the split step uses the exact inverse ``T^-1(x) = mean + A^-1 (x - mean -
shift)`` of ``T(u) = mean + shift + A (u - mean)``; loo's ``mean - shift + A^-1 (x - mean)``
is exact only when no scaling or covariance step was accepted.

References
----------
.. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
   importance sampling." Statistics and Computing 31(2), 2021.
.. [2] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
   importance sampling." Journal of Machine Learning Research 25(72), 2024.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import numba
import numpy as np

from pymc_edp.base.binning import Bins
from pymc_edp.base.mcse import _add_cut_point_terms, ess_mean, kish_ess_from_log
from pymc_edp.base.psis import khat_threshold as _khat_threshold
from pymc_edp.base.psis import psislw

__all__ = [
    "TRANSFORMS",
    "MatchedDraws",
    "moment_match",
    "moved_log_ratio_se",
    "split_halves",
]

#: Names of the affine transformations, in the order they are tried.
TRANSFORMS = ("shift", "scale", "cov")


@dataclass(frozen=True)
class MatchedDraws:
    """Outcome of moment matching one neighbour.

    Attributes
    ----------
    draws : ndarray, shape (n_dims, S)
        Final unconstrained draws.
    log_weights, log_weights_full : ndarray, shape (S,)
        PSIS-normalised log-weights of ``draws`` to the neighbour and full-data posterior.
    khat_before, khat_after, khat_full : float
        k-hat of plain PSIS, of the last accepted iteration (``-inf`` for a constant
        ratio), and of its full-data weights.
    iterations : int
    transforms : tuple of str
        The accepted transformations (:data:`TRANSFORMS`), in order.
    split : bool
    reff, ess : float
        Relative efficiency of the final draws; loo's ``n_eff``,
        ``min(1 / sum w^2, 1 / sum w_full^2) reff``.
    shift, matrix : ndarray
        Total map ``T(u) = mean(u) + shift + matrix (u - mean(u))``.
    """

    draws: np.ndarray
    log_weights: np.ndarray
    log_weights_full: np.ndarray
    khat_before: float
    khat_after: float
    khat_full: float
    iterations: int
    transforms: tuple[str, ...]
    split: bool
    reff: float
    ess: float
    shift: np.ndarray
    matrix: np.ndarray


def split_halves(n_samples: int, n_chains: int = 1) -> np.ndarray:
    """Mask of the draws the split step transforms: the first ``S // 2`` in draw-major order.

    As arviz_stats' ``_split_moment_match`` (the first half of every chain, for even chains).
    """
    n_chains = max(int(n_chains), 1)
    if n_samples % n_chains:
        raise ValueError(f"{n_samples} samples cannot be split into {n_chains} equal chains")
    order = np.arange(n_samples).reshape(n_chains, -1).T.ravel()
    mask = np.zeros(n_samples, dtype=bool)
    mask[order[: n_samples // 2]] = True
    return mask


@contextmanager
def one_thread() -> Iterator[None]:
    """Run numba's parallel kernels on this thread only: on one row fork-join costs more."""
    before = numba.get_num_threads()
    if before == 1:  # already serial (e.g. nested)
        yield
        return
    numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(before)


def _clean(lr: np.ndarray) -> np.ndarray:
    """NaN and +inf log weights to -inf (zero weight), as arviz_stats does."""
    return np.where(np.isnan(lr) | np.isposinf(lr), -np.inf, lr)


def _psis(lr: np.ndarray, reff: float, tail_rule: str) -> tuple[np.ndarray, float]:
    """Smoothed normalised log weights of one row and its k-hat."""
    lw, k = psislw(_clean(np.asarray(lr, dtype=float)), reff, tail_rule=tail_rule)
    return lw, float(k)


def _weighted_moments(u: np.ndarray, lw: np.ndarray):
    w = np.exp(lw - lw.max())
    w /= w.sum()
    return w, u.mean(axis=1), u @ w


def _step_shift(u, lw):
    _, mean, mean_w = _weighted_moments(u, lw)
    return mean_w - mean, None


def _step_scale(u, lw):
    w, mean, mean_w = _weighted_moments(u, lw)
    n_samples = u.shape[1]
    second = (u**2) @ w
    var_w = (second - mean_w**2) * n_samples / (n_samples - 1)
    var = u.var(axis=1, ddof=1)
    scaling = np.ones_like(mean)
    ok = (var > 1e-9) & (var_w > 1e-9)
    scaling[ok] = np.sqrt(var_w[ok] / var[ok])
    return mean_w - mean, np.diag(scaling)


def _step_cov(u, lw):
    w, mean, mean_w = _weighted_moments(u, lw)
    n_dims = u.shape[0]
    cov = np.atleast_2d(np.cov(u, ddof=1))
    cov_w = np.atleast_2d(np.cov(u, aweights=w, ddof=1))
    try:
        for c in (cov, cov_w):
            low = np.linalg.eigvalsh(c).min()
            if low <= 0:
                c += np.eye(n_dims) * (1e-6 - low)
        mapping = np.linalg.cholesky(cov_w) @ np.linalg.inv(np.linalg.cholesky(cov))
    except np.linalg.LinAlgError:
        return None
    return mean_w - mean, mapping


_STEPS = {"shift": _step_shift, "scale": _step_scale, "cov": _step_cov}


def _apply(u: np.ndarray, shift: np.ndarray, mapping: np.ndarray | None) -> np.ndarray:
    """``mean(u) + shift + mapping (u - mean(u))`` column-wise."""
    mean = u.mean(axis=1, keepdims=True)
    centred = u - mean
    if mapping is not None:
        centred = mapping @ centred
    return centred + mean + shift[:, None]


def _reff_of(log_ratio: np.ndarray, n_chains: int) -> float:
    """Relative efficiency of ``exp(-log_ratio)`` (loo: of the left-out likelihood)."""
    x = -np.asarray(log_ratio, dtype=float)
    x = np.exp(x - x[np.isfinite(x)].max()) if np.isfinite(x).any() else np.ones_like(x)
    return float(ess_mean(x[None], n_chains)[0] / x.size)


def moment_match(
    u: np.ndarray,
    log_target_full: Callable[[np.ndarray], np.ndarray],
    log_ratio: Callable[[np.ndarray], np.ndarray],
    *,
    reff: float = 1.0,
    khat_threshold: float | None = None,
    max_iters: int = 30,
    split: bool = True,
    cov: bool = True,
    tail_rule: str = "arviz",
    n_chains: int = 1,
    log_target_draws: np.ndarray | None = None,
    log_ratio_draws: np.ndarray | None = None,
    log_target_and_ratio: Callable[[np.ndarray], tuple[np.ndarray, np.ndarray]] | None = None,
) -> MatchedDraws:
    """Moment-matched importance weights of one neighbour posterior.

    Parameters
    ----------
    u : ndarray, shape (n_dims, S)
        Full-data draws in the unconstrained space, chain-major.
    log_target_full : callable
        ``(n_dims, m) -> (m,)``: unnormalised full-data log density (Jacobians included).
    log_ratio : callable
        ``(n_dims, m) -> (m,)``: ``log p(x | D') - log p(x | D)`` up to a constant.
    reff : float, default 1
        Relative MCMC efficiency for the PSIS tail length.
    khat_threshold : float, optional
        Stop at or below it; default :func:`pymc_edp.base.psis.khat_threshold`.
    max_iters : int, default 30
        Most accepted transformations.
    split : bool, default True
        The split multiple-importance-sampling step.
    cov : bool, default True
        Also try the covariance step (only when ``S >= 10 n_dims``, as loo).
    tail_rule : {"arviz", "arviz_stats"}, default "arviz"
        As in :func:`pymc_edp.base.psis.psislw`.
    n_chains : int, default 1
    log_target_draws, log_ratio_draws : ndarray, shape (S,), optional
        The two callbacks at ``u``, when known.
    log_target_and_ratio : callable, optional
        Both callbacks in one evaluation.

    Examples
    --------
    Full posterior N(0, 1), neighbour N(3.5, 1):

    >>> from pymc_edp.base.affine import moment_match
    >>> u = np.random.default_rng(0).normal(size=(1, 4000))
    >>> target = lambda x: -0.5 * x[0] ** 2
    >>> ratio = lambda x: -0.5 * (x[0] - 3.5) ** 2 + 0.5 * x[0] ** 2
    >>> res = moment_match(u, target, ratio)
    >>> bool(res.khat_before > 0.7 > res.khat_after)
    True
    """
    with one_thread():
        return _match_draws(
            u, log_target_full, log_ratio, reff, khat_threshold, max_iters, split, cov,
            tail_rule, n_chains, log_target_draws, log_ratio_draws, log_target_and_ratio,
        )  # fmt: skip


def _match_draws(
    u, log_target_full, log_ratio, reff, khat_threshold, max_iters, split, cov, tail_rule,
    n_chains, log_target_draws, log_ratio_draws, log_target_and_ratio,
) -> MatchedDraws:  # fmt: skip
    """The work of :func:`moment_match` (in one numba thread), with the same arguments."""
    if log_target_and_ratio is None:

        def log_target_and_ratio(x):
            return log_target_full(x), log_ratio(x)

    u = np.atleast_2d(np.asarray(u, dtype=float))
    n_dims, n_samples = u.shape
    threshold = _khat_threshold(n_samples) if khat_threshold is None else float(khat_threshold)
    lp0, lr0 = _values_at_draws(
        u, log_target_full, log_ratio, log_target_and_ratio, log_target_draws, log_ratio_draws
    )
    if np.ptp(lr0) == 0:
        # the neighbour posterior is the full-data one: exactly uniform weights
        lw = np.full(n_samples, -np.log(n_samples))
        return MatchedDraws(
            u, lw, lw.copy(), -np.inf, -np.inf, 0.0, 0, (), False, float(reff),
            float(n_samples * reff), np.zeros(n_dims), np.eye(n_dims),
        )  # fmt: skip
    steps = [s for s in TRANSFORMS if s != "cov" or (cov and n_samples >= 10 * n_dims)]
    st = _match_loop(
        u, lp0, lr0, log_target_and_ratio, reff, tail_rule, threshold, steps, max_iters
    )
    cur, lwi, lwfi = st.draws, st.log_weights, st.log_weights_full
    reff_final = float(reff)
    did_split = False
    if not st.accepted:
        cur = u
        reff_final = _reff_of(lr0, n_chains)
    elif split:
        cur, lwi, lwfi, reff_final = _split(
            u, lp0, lr0, st.draws, st.log_target, st.log_ratio, st.shift, st.matrix,
            log_target_full, reff, tail_rule, n_chains,
        )  # fmt: skip
        did_split = True
    else:
        reff_final = _reff_of(st.log_ratio, n_chains)
    ess = min(kish_ess_from_log(lw, normalised=True) for lw in (lwi, lwfi)) * reff_final
    return MatchedDraws(
        draws=cur,
        log_weights=lwi,
        log_weights_full=lwfi,
        khat_before=st.khat_before,
        khat_after=st.khat,
        khat_full=float(st.khat_full),
        iterations=len(st.accepted),
        transforms=tuple(st.accepted),
        split=did_split,
        reff=reff_final,
        ess=float(ess),
        shift=st.shift,
        matrix=st.matrix,
    )


def _values_at_draws(
    u, log_target_full, log_ratio, log_target_and_ratio, log_target_draws, log_ratio_draws
) -> tuple[np.ndarray, np.ndarray]:
    """``(log target, log ratio)`` at the draws ``u``: the ones given, or computed."""
    if log_target_draws is None and log_ratio_draws is None:
        return _both(log_target_and_ratio, u, u.shape[1])
    lp0 = log_target_full(u) if log_target_draws is None else log_target_draws
    lr0 = log_ratio(u) if log_ratio_draws is None else log_ratio_draws
    return _checked(lp0, lr0, u.shape[1])


@dataclass
class _MatchState:
    """Where the iterations of :func:`_match_loop` stopped (fields as :class:`MatchedDraws`)."""

    draws: np.ndarray
    log_target: np.ndarray
    log_ratio: np.ndarray
    log_weights: np.ndarray
    log_weights_full: np.ndarray
    khat_before: float
    khat: float
    khat_full: float
    shift: np.ndarray
    matrix: np.ndarray
    accepted: list[str]


def _match_loop(
    u, lp0, lr0, log_target_and_ratio, reff, tail_rule, threshold, steps, max_iters
) -> _MatchState:
    """Keep the first of ``steps`` lowering k-hat, until ``threshold``, ``max_iters`` or none."""
    n_dims, n_samples = u.shape
    lwi, k = _psis(lr0, reff, tail_rule)
    st = _MatchState(
        u, lp0, lr0, lwi, np.full(n_samples, -np.log(n_samples)), k, k, 0.0,
        np.zeros(n_dims), np.eye(n_dims), [],
    )  # fmt: skip
    while len(st.accepted) < max_iters and st.khat > threshold:
        for name in steps:
            step = _STEPS[name](st.draws, st.log_weights)
            if step is None:
                continue
            shift, mapping = step
            moved = _apply(st.draws, shift, mapping)
            lp_new, lr_new = _both(log_target_and_ratio, moved, n_samples)
            lwi_new, k_new = _psis(lr_new + lp_new - lp0, reff, tail_rule)
            if k_new < st.khat:
                st.log_weights_full, st.khat_full = _psis(lp_new - lp0, reff, tail_rule)
                st.log_weights, st.khat = lwi_new, k_new
                st.draws, st.log_target, st.log_ratio = moved, lp_new, lr_new
                st.shift = st.shift + shift
                if mapping is not None:
                    st.matrix = mapping @ st.matrix
                st.accepted.append(name)
                break
        else:
            break
    return st


def _both(log_target_and_ratio, x, n):
    return _checked(*log_target_and_ratio(x), n)


def _checked(lp, lr, n):
    lp, lr = np.asarray(lp, dtype=float), np.asarray(lr, dtype=float)
    if lp.shape != (n,) or lr.shape != (n,):
        raise ValueError(
            f"the log density and log ratio must have shape ({n},), got {lp.shape} and {lr.shape}"
        )
    return lp, lr


def _split(
    u, lp0, lr0, moved_all, lp_moved_all, lr_moved_all, shift, matrix, log_target_full, reff,
    tail_rule, n_chains,
):  # fmt: skip
    """Split step: half the draws moved (from ``moved_all``), weighted by the mixture proposal."""
    n_samples = u.shape[1]
    mean = u.mean(axis=1, keepdims=True)
    sign, logdet = np.linalg.slogdet(matrix)
    take = split_halves(n_samples, n_chains)
    rest = ~take
    x = u.copy()
    x[:, take] = moved_all[:, take]
    # T^-1 at the untransformed half (T^-1 of the transformed half is the original draw)
    inv = np.linalg.solve(matrix, u[:, rest] - mean - shift[:, None]) + mean
    lp_x = lp0.copy()
    lp_x[take] = lp_moved_all[take]
    lp_inv = lp0.copy()
    lp_inv[rest] = np.asarray(log_target_full(inv), dtype=float)
    lr_x = lr0.copy()
    lr_x[take] = lr_moved_all[take]
    log_jac_inv = -logdet if sign > 0 else -np.inf
    log_q = np.logaddexp(lp_x, lp_inv + log_jac_inv)
    lwi, _ = _psis(lp_x + lr_x - log_q, reff, tail_rule)
    lwfi, _ = _psis(_clean(lwi - lr_x), reff, tail_rule)
    reff_new = float(reff)
    if n_chains > 1:
        n_draws = n_samples // n_chains
        half = (n_samples // 2) // n_chains
        by_chain = lr_x.reshape(n_chains, n_draws)
        reff_new = min(
            _reff_of(by_chain[:, :half].ravel(), n_chains),
            _reff_of(by_chain[:, half:].ravel(), n_chains),
        )
    return x, lwi, lwfi, reff_new


def moved_log_ratio_se(
    log_weights: np.ndarray,
    moved: np.ndarray,
    bins: Bins,
    parameter: int,
    bin_index: int,
    *,
    draws: np.ndarray,
    order: np.ndarray,
    n_chains: int = 1,
    smoothing: float = 0.01,
    n_local: int | None = None,
    strata: np.ndarray | None = None,
) -> tuple[float, float, float]:
    """Bin log-ratio of a moment-matched neighbour, its Monte-Carlo standard error and ESS.

    The influence function of :func:`pymc_edp.base.mcse.bin_log_ratio_se` with the moved
    draws ``theta'`` and their final weights, ``r(q)`` as in
    :func:`pymc_edp.base.mcse.refit_log_ratio_se`; moved draw ``s`` is a function of
    full-data draw ``s``, so the terms pair by index. The split step's halves are strata,
    each adding ``(S_h / S)^2 var_h(psi) / ESS_h(psi)``.

    Parameters
    ----------
    log_weights : ndarray, shape (S,)
        Normalised final log-weights of the moved draws.
    moved : ndarray, shape (n_parameters, S)
        Constrained parameter values of the moved draws.
    bins, parameter, bin_index, draws, order, n_chains, n_local
        As in :func:`pymc_edp.base.mcse.refit_log_ratio_se`.
    smoothing : float, default 0.01
    strata : ndarray of bool, shape (S,), optional
        The draws the split step transformed (:func:`split_halves`).

    Returns
    -------
    log_ratio, se, ess : float
        ``ess`` summed over the strata.

    References
    ----------
    .. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
       importance sampling." Statistics and Computing 31(2), 2021.
    .. [2] Bahadur, R. R. "A note on quantiles in large samples." Annals of Mathematical
       Statistics 37(3), 1966.
    """
    p, j = int(parameter), int(bin_index)
    lw = np.asarray(log_weights, dtype=float)
    n_samples = lw.size
    w = np.exp(lw - lw.max())
    w /= w.sum()
    r = n_samples * w
    theta = np.asarray(moved[p], dtype=float)
    cut = bins.edges[p, : bins.n_bins[p] - 1]
    in_bin = np.searchsorted(cut, theta, side="right") == j
    m = float(w @ in_bin)
    psi = r * (in_bin - m)
    _add_cut_point_terms(
        psi, theta, bins, p, j, draws=draws, order=order, n_local=n_local, weights=w
    )
    if strata is None:
        strata = np.zeros(n_samples, dtype=bool)
    var, e = 0.0, 0.0
    for part in (psi[strata], psi[~strata]):
        if part.size == 0:
            continue
        centred = part - part.mean()
        with one_thread():
            e_h = float(ess_mean(centred[None], n_chains)[0])
        var += (part.size / n_samples) ** 2 * float(np.mean(centred**2)) / e_h
        e += e_h
    se_m = np.sqrt(var)
    count = float(bins.counts[p, j])
    log_ratio = np.log(n_samples * m + smoothing) - np.log(count + smoothing)
    se = (
        n_samples * se_m / (n_samples * m + smoothing) if n_samples * m + smoothing > 0 else np.inf
    )
    return float(log_ratio), float(se), e
