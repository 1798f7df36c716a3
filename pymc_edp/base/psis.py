"""Compiled Pareto-smoothed importance sampling (PSIS), and the k-hat classes.

:func:`arviz.psislw` (ArviZ 0.23) in numba, many rows in parallel: the cutoff by
quickselect (only the tail is sorted), the generalized-Pareto fit as tight scalar loops.
The arithmetic follows ArviZ step by step, so the output agrees to rounding error.
"""

from __future__ import annotations

import math

import numba
import numpy as np

from pymc_edp.base.common import installed_major

__all__ = [
    "KHAT_CLASSES",
    "PSIS_TAIL_RULE",
    "TAIL_RULES",
    "khat_classes",
    "khat_table",
    "khat_threshold",
    "psis_tail_length",
    "psislw",
]

#: Tail-length rules: ArviZ 0.23's ``psislw`` and arviz_stats' (ArviZ 1.x) PSIS.
TAIL_RULES = ("arviz", "arviz_stats")
#: The tail rule of the installed ArviZ (:func:`psis_tail_length`), so that k-hats match the
#: user's stack; its version is read from its metadata, ArviZ is not imported.
PSIS_TAIL_RULE = "arviz_stats" if installed_major("arviz") >= 1 else "arviz"

_EPS = float(np.finfo(np.float64).eps)
_CUTOFFMIN = float(np.log(np.finfo(np.float64).tiny))
_PRIOR_BS = 3.0
_PRIOR_K = 10.0
# The 8-factor products of the GPD profile likelihood are used while every factor is below
# this bound (8 of them stay below 1e296) and the resulting mean log is at least _FAST_MEAN_MIN
# in magnitude (its absolute error of a few eps is then a relative error below ~1e-13).
_FAST_FACTOR_MAX = 1e37
_FAST_MEAN_MIN = 1e-2
# exp(t) = 2**k * exp(r), k = round(t / ln 2), |r| <= ln(2) / 2 (Cody-Waite split of ln 2)
_LOG2E = 1.4426950408889634
_LN2_HI = 6.93147180369123816490e-01
_LN2_LO = 1.90821492927058770002e-10
#: ``1 / k!`` for ``k = 13, ..., 0``: Horner's order of exp's degree-13 Taylor polynomial.
_EXP_TAYLOR = tuple(1.0 / math.factorial(k) for k in range(13, -1, -1))
# ``error_model="numpy"``: float division by zero gives inf/nan as in NumPy instead of raising.
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_JIT)
def _xorshift(state):  # pragma: no cover - compiled
    """One step of Marsaglia's xorshift64 generator."""
    state ^= state << np.uint64(13)
    state ^= state >> np.uint64(7)
    state ^= state << np.uint64(17)
    return state


@numba.njit(**_JIT)
def _select(a, k):  # pragma: no cover - compiled
    """The ``k``-th smallest value (0-based) of ``a`` (no NaN), reordering ``a`` in place.

    Quickselect (pivot: median of three xorshift picks), finished by a heapsort past
    ``8 len(a)`` visits, so the worst case is ``O(S log S)``.
    """
    lo = 0
    hi = a.shape[0] - 1
    budget = 8 * a.shape[0] + 64
    state = np.uint64(0x9E3779B97F4A7C15)
    while hi > lo:
        if budget < 0:
            _heapsort(a[lo : hi + 1], np.zeros(hi - lo + 1, dtype=np.int64), hi - lo + 1)
            return a[k]
        width = np.uint64(hi - lo + 1)
        state = _xorshift(state)
        x = a[lo + np.int64(state % width)]
        state = _xorshift(state)
        y = a[lo + np.int64(state % width)]
        state = _xorshift(state)
        z = a[lo + np.int64(state % width)]
        if x > y:
            x, y = y, x
        if y > z:
            y = z
        piv = y if y > x else x
        # a[lo:store] < piv <= a[store:hi + 1]
        store = lo
        for i in range(lo, hi + 1):
            v = a[i]
            a[i] = a[store]
            a[store] = v
            store += v < piv
        budget -= hi - lo + 1
        if k < store:
            hi = store - 1
        elif store > lo:
            lo = store
        else:
            # piv is the minimum of the range: split off the elements equal to it
            for i in range(lo, hi + 1):
                v = a[i]
                a[i] = a[store]
                a[store] = v
                store += v == piv
            budget -= hi - lo + 1
            if k < store:
                return piv
            lo = store
    return a[k]


@numba.njit(**_JIT)
def _sift_down(hv, hi, pos, end):  # pragma: no cover - compiled
    """Max-heap sift-down for the keys ``(hv, hi)`` (value, then index) in ``[0, end)``."""
    val = hv[pos]
    idx = hi[pos]
    while True:
        child = 2 * pos + 1
        if child >= end:
            break
        right = child + 1
        if right < end and (
            hv[right] > hv[child] or (hv[right] == hv[child] and hi[right] > hi[child])
        ):
            child = right
        if hv[child] > val or (hv[child] == val and hi[child] > idx):
            hv[pos] = hv[child]
            hi[pos] = hi[child]
            pos = child
        else:
            break
    hv[pos] = val
    hi[pos] = idx


@numba.njit(**_JIT)
def _heapsort(hv, hi, n):  # pragma: no cover - compiled
    """Heapsort ``(hv[:n], hi[:n])`` in place into ascending order of (value, index)."""
    for p in range(n // 2 - 1, -1, -1):
        _sift_down(hv, hi, p, n)
    for end in range(n - 1, 0, -1):
        hv[0], hv[end] = hv[end], hv[0]
        hi[0], hi[end] = hi[end], hi[0]
        _sift_down(hv, hi, 0, end)


@numba.njit(**_JIT)
def _mean_log1p(neg_b, ary, n):  # pragma: no cover - compiled
    """``mean(log1p(neg_b * ary[:n]))`` with one ``log1p`` per element (reference path)."""
    acc = 0.0
    for i in range(n):
        acc += math.log1p(neg_b * ary[i])
    return acc / n


@numba.njit(**_JIT)
def _mean_log1p_fast(neg_b, ary, n):  # pragma: no cover - compiled
    """``mean(log1p(neg_b * ary[:n]))`` taking one ``log`` per product of 8 factors (see above)."""
    acc = 0.0
    n8 = n - n % 8
    for i in range(0, n8, 8):
        p0 = (1.0 + neg_b * ary[i]) * (1.0 + neg_b * ary[i + 1])
        p1 = (1.0 + neg_b * ary[i + 2]) * (1.0 + neg_b * ary[i + 3])
        p2 = (1.0 + neg_b * ary[i + 4]) * (1.0 + neg_b * ary[i + 5])
        p3 = (1.0 + neg_b * ary[i + 6]) * (1.0 + neg_b * ary[i + 7])
        acc += math.log((p0 * p1) * (p2 * p3))
    for i in range(n8, n):
        acc += math.log1p(neg_b * ary[i])
    return acc / n


@numba.njit(**_JIT)
def _gpdfit(ary, n, work):  # pragma: no cover - compiled
    """ArviZ's Zhang-Stephens GPD fit ``(k, sigma)`` of sorted ``ary[:n]``; ``work`` is scratch."""
    m_est = 30 + int(math.sqrt(n))
    b_ary = work[0]
    k_ary = work[1]
    len_scale = work[2]
    weights = work[3]
    denom = _PRIOR_BS * ary[int(n / 4 + 0.5) - 1]
    inv_max = 1.0 / ary[n - 1]
    for j in range(m_est):
        b_ary[j] = (1.0 - math.sqrt(m_est / (j + 1 - 0.5))) / denom + inv_max
    # profile log-likelihood of each candidate b: the m x n hot loop
    all_finite = True
    ls_max = -np.inf
    for j in range(m_est):
        bj = b_ary[j]
        kj = np.nan
        # every factor lies in [~1e-3, 1 + |b| max(x)]: products of 8 stay in range
        if abs(bj) * ary[n - 1] < _FAST_FACTOR_MAX:
            kj = _mean_log1p_fast(-bj, ary, n)
        if not abs(kj) >= _FAST_MEAN_MIN:
            kj = _mean_log1p(-bj, ary, n)
        k_ary[j] = kj
        lsj = n * (math.log(-(bj / kj)) - kj - 1.0)
        len_scale[j] = lsj
        if not math.isfinite(lsj):
            all_finite = False
        elif lsj > ls_max:
            ls_max = lsj
    if all_finite:
        # softmax, equal to ArviZ's 1 / sum_l exp(ls_l - ls_j) up to rounding
        tot = 0.0
        for j in range(m_est):
            weights[j] = math.exp(len_scale[j] - ls_max)
            tot += weights[j]
        for j in range(m_est):
            weights[j] /= tot
    else:
        # ArviZ's literal formula, so that inf/nan propagate exactly as in the reference
        for j in range(m_est):
            acc = 0.0
            for l in range(m_est):  # noqa: E741
                acc += math.exp(len_scale[l] - len_scale[j])
            weights[j] = 1.0 / acc
    # drop negligible weights, renormalise, posterior mean of b
    tiny = 10.0 * _EPS
    wsum = 0.0
    for j in range(m_est):
        if weights[j] >= tiny:
            wsum += weights[j]
    b_post = 0.0
    for j in range(m_est):
        if weights[j] >= tiny:
            b_post += b_ary[j] * (weights[j] / wsum)
    k_post = _mean_log1p(-b_post, ary, n)
    sigma = -k_post / b_post
    k_post = (n * k_post + _PRIOR_K * 0.5) / (n + _PRIOR_K)
    return k_post, sigma


@numba.njit(**_JIT)
def _exp_parts(x, ref, mant, expo):  # pragma: no cover - compiled
    """Split ``exp(x - ref)`` into ``mant * 2**expo`` with branch-free, vectorisable code.

    ``x - ref`` must not be NaN; it is clamped to ``[-708, 709]`` (harmless in a sum whose
    largest term is 1). ``exp(r)`` is the degree-13 Taylor polynomial on ``|r| <= ln(2) / 2``:
    about 1 ulp, like ``math.exp``.
    """
    for i in range(x.shape[0]):
        t = min(max(x[i] - ref, -708.0), 709.0)
        k = math.floor(t * _LOG2E + 0.5)
        r = (t - k * _LN2_HI) - k * _LN2_LO
        p = _EXP_TAYLOR[0]
        for c in _EXP_TAYLOR[1:]:
            p = p * r + c
        mant[i] = p
        expo[i] = (np.int64(k) + 1023) << 52


@numba.njit(**_JIT)
def _dot_scaled(mant, expo):  # pragma: no cover - compiled
    """``sum(mant * 2**e)`` where ``expo`` holds the IEEE bit patterns of the ``2**e``.

    Eight accumulators in a fixed order: SIMD-fast, yet independent of memory alignment,
    so a row gives the same bits in whichever chunk of rows it is computed.
    """
    scale = expo.view(np.float64)
    n = mant.shape[0]
    a0 = a1 = a2 = a3 = a4 = a5 = a6 = a7 = 0.0
    i = 0
    while i + 8 <= n:
        a0 += mant[i] * scale[i]
        a1 += mant[i + 1] * scale[i + 1]
        a2 += mant[i + 2] * scale[i + 2]
        a3 += mant[i + 3] * scale[i + 3]
        a4 += mant[i + 4] * scale[i + 4]
        a5 += mant[i + 5] * scale[i + 5]
        a6 += mant[i + 6] * scale[i + 6]
        a7 += mant[i + 7] * scale[i + 7]
        i += 8
    while i < n:
        a0 += mant[i] * scale[i]
        i += 1
    return ((a0 + a1) + (a2 + a3)) + ((a4 + a5) + (a6 + a7))


@numba.njit(**_JIT)
def _psis_row(src, dst, n_tail, normalize, buf, expo, tv, ti, ary, work):  # pragma: no cover
    """PSIS for one row: read ``src``, write ``dst`` (may alias ``src``), return k-hat."""
    n_samples = src.shape[0]
    # pass 1: maximum; NaN or an infinite maximum turn the whole row into NaN (as ArviZ)
    max_x = -np.inf
    bad = False
    for i in range(n_samples):
        v = src[i]
        if v > max_x:
            max_x = v
        elif v != v:
            bad = True
    if bad or not math.isfinite(max_x):
        for i in range(n_samples):
            dst[i] = np.nan
        return np.inf

    # pass 2: shift by the maximum (ArviZ compares shifted values) and copy for selection
    for i in range(n_samples):
        x = src[i] - max_x
        dst[i] = x
        buf[i] = x
    # cutoff: the (M+1)-th largest value, floored at log(tiny); the tail is strictly above
    thr = _select(buf, n_samples - n_tail - 1)
    xcutoff = max(thr, _CUTOFFMIN)
    tail_len = 0
    for i in range(n_samples):
        x = dst[i]
        if x > xcutoff:
            tv[tail_len] = x
            ti[tail_len] = i
            tail_len += 1

    khat = np.inf
    ref = 0.0  # maximum of the row before normalisation (0 unless the tail is smoothed)
    if tail_len > 4:
        _heapsort(tv, ti, tail_len)
        expxcutoff = math.exp(xcutoff)
        for i in range(tail_len):
            ary[i] = math.exp(tv[i]) - expxcutoff
        khat, sigma = _gpdfit(ary, tail_len, work)
        if math.isfinite(khat):
            # smoothed order statistics: GPD quantiles at (i + 0.5) / M, truncated at 0
            ref = thr  # not above the body's maximum; the smoothed tail is at least xcutoff
            for i in range(tail_len):
                prob = (0.5 + i) / tail_len
                if sigma <= 0:
                    q = np.nan
                elif abs(khat) < _EPS:
                    q = -math.log1p(-prob) * sigma
                else:
                    q = math.expm1(-khat * math.log1p(-prob)) / khat * sigma
                val = math.log(q + expxcutoff)
                if val > 0:
                    val = 0.0
                dst[ti[i]] = val
                if val > ref or val != val:
                    ref = val
    if normalize:
        if ref != ref:
            # NaN in the smoothed tail (degenerate fit): ArviZ's logsumexp makes it all NaN
            for i in range(n_samples):
                dst[i] = np.nan
        else:
            _exp_parts(dst, ref, buf, expo)
            lse = math.log(_dot_scaled(buf, expo)) + ref
            for i in range(n_samples):
                dst[i] -= lse
    else:
        for i in range(n_samples):
            dst[i] += max_x
    return khat


@numba.njit(parallel=True, **_JIT)
def _psislw_rows(src, dst, khat, n_tail, normalize):  # pragma: no cover - compiled
    """Apply :func:`_psis_row` to every row of ``src`` in parallel."""
    n_rows, n_samples = src.shape
    m_max = 30 + int(math.sqrt(n_tail))
    for r in numba.prange(n_rows):
        buf = np.empty(n_samples)
        expo = np.empty(n_samples, dtype=np.int64)
        tv = np.empty(n_tail)
        ti = np.empty(n_tail, dtype=np.int64)
        ary = np.empty(n_tail)
        work = np.empty((4, m_max))
        khat[r] = _psis_row(src[r], dst[r], n_tail, normalize, buf, expo, tv, ti, ary, work)


def _same_buffer(a: np.ndarray, b: np.ndarray) -> bool:
    """Whether two arrays view exactly the same elements in the same layout."""
    return (
        a.shape == b.shape
        and a.strides == b.strides
        and a.__array_interface__["data"][0] == b.__array_interface__["data"][0]
    )


def psis_tail_length(n_samples: int, reff: float = 1.0, rule: str = "arviz") -> int:
    """Number ``M`` of draws in the Pareto-smoothed tail of ``S = n_samples`` draws.

    Parameters
    ----------
    n_samples : int
    reff : float, default 1.0
        Relative MCMC efficiency.
    rule : {"arviz", "arviz_stats"}, default "arviz"
        ``"arviz"`` (ArviZ 0.23's ``psislw``): ``ceil(min(S / 5, 3 sqrt(S / reff)))``.
        ``"arviz_stats"`` (ArviZ 1.x): ``floor(3 sqrt(S / reff))`` when ``S reff > 225``,
        else ``floor(S / 5)``.

    Examples
    --------
    >>> from pymc_edp.base.psis import psis_tail_length
    >>> psis_tail_length(4000), psis_tail_length(4000, rule="arviz_stats")
    (190, 189)
    """
    if rule == "arviz":
        # ArviZ's cutoff rule, computed with the same Python float arithmetic
        return int(np.ceil(min(n_samples / 5.0, 3 * (n_samples / reff) ** 0.5)))
    if rule == "arviz_stats":
        if n_samples * reff > 225:
            return int(np.floor(3 * (n_samples / reff) ** 0.5))
        return int(np.floor(n_samples / 5))
    raise ValueError(f"rule must be one of {TAIL_RULES}, got {rule!r}")


def psislw(
    log_weights: np.ndarray,
    reff: float = 1.0,
    *,
    normalize: bool = True,
    out: np.ndarray | None = None,
    tail_rule: str = "arviz",
) -> tuple[np.ndarray, np.ndarray]:
    """Pareto-smoothed importance sampling of many rows of log weights.

    As :func:`arviz.psislw`: per row, a generalized Pareto distribution [2]_ is fitted to
    the ``M`` largest log weights (:func:`psis_tail_length`), which are replaced by its
    quantiles at ``(i - 1/2) / M``, truncated at the largest raw log weight. Tails of 4 or
    fewer draws give ``k = inf``, unsmoothed; rows with NaN or an infinite maximum come out
    NaN with ``k = inf``.

    Parameters
    ----------
    log_weights : numpy.ndarray, shape (..., S)
    reff : float, default 1.0
        Relative MCMC efficiency ``ess / S``.
    normalize : bool, default True
        Each row's ``logsumexp`` made 0.
    out : numpy.ndarray, optional
        Float64, C-contiguous; may be ``log_weights`` itself.
    tail_rule : {"arviz", "arviz_stats"}, default "arviz"
        As in :func:`psis_tail_length`.

    Returns
    -------
    lw_out : numpy.ndarray, shape (..., S)
    khat : numpy.ndarray, shape (...)
        Above :func:`khat_threshold` the weights are unreliable.

    Raises
    ------
    ValueError
        Fewer than 2 samples, a bad ``reff`` or ``out``.

    Notes
    -----
    Rows run on numba's thread pool. Ties inside the tail are broken by position (k-hat and
    the smoothed values are ArviZ's). Extra memory: the output and a row per thread.

    References
    ----------
    .. [1] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. (2024). "Pareto
       smoothed importance sampling." Journal of Machine Learning Research 25(72), 1-58.
    .. [2] Zhang, J. and Stephens, M. A. (2009). "A new and efficient estimation method for
       the generalized Pareto distribution." Technometrics 51(3), 316-325.

    Examples
    --------
    >>> from pymc_edp.base.psis import psislw
    >>> lw = np.random.default_rng(0).standard_t(3, size=(5, 1000))
    >>> smoothed, khat = psislw(lw)
    >>> smoothed.shape, khat.shape
    ((5, 1000), (5,))
    """
    lw = np.asarray(log_weights, dtype=np.float64)
    if lw.ndim == 0:
        raise ValueError("log_weights must have a sample axis (the last one).")
    shape = lw.shape
    n_samples = shape[-1]
    if n_samples < 2:
        raise ValueError(f"PSIS needs at least 2 samples per row, got {n_samples}.")
    reff = float(reff)
    if not (math.isfinite(reff) and reff > 0):
        raise ValueError(f"reff must be a positive finite number, got {reff}.")
    n_tail = psis_tail_length(n_samples, reff, tail_rule)

    if out is None:
        out = np.empty(shape, dtype=np.float64)
    else:
        if not isinstance(out, np.ndarray) or out.dtype != np.float64:
            raise ValueError("out must be a float64 numpy array.")
        if out.shape != shape:
            raise ValueError(f"out has shape {out.shape}, expected {shape}.")
        if not (out.flags.c_contiguous and out.flags.writeable):
            raise ValueError("out must be C-contiguous and writable.")

    src = np.ascontiguousarray(lw.reshape(-1, n_samples))
    dst = out.reshape(-1, n_samples)
    if src.size and np.may_share_memory(src, dst) and not _same_buffer(src, dst):
        src = src.copy()
    khat = np.empty(src.shape[0], dtype=np.float64)
    if src.shape[0]:
        _psislw_rows(src, dst, khat, n_tail, bool(normalize))
    return out, khat.reshape(shape[:-1])


def khat_threshold(n_samples: int) -> float:
    """Threshold ``min(1 - 1 / log10(S), 0.7)`` of the Pareto k-hat for ``S`` draws [1]_.

    0.7 from ``S = 2,155`` draws on, stricter below.

    Raises
    ------
    ValueError
        If ``n_samples < 2``.

    References
    ----------
    .. [1] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. (2024). "Pareto
       smoothed importance sampling." Journal of Machine Learning Research 25(72), 1-58.

    Examples
    --------
    >>> from pymc_edp.base.psis import khat_threshold
    >>> khat_threshold(4000)
    0.7
    >>> round(khat_threshold(100), 6)
    0.5
    """
    n_samples = int(n_samples)
    if n_samples < 2:
        raise ValueError(f"n_samples must be at least 2, got {n_samples}.")
    return min(1.0 - 1.0 / math.log10(n_samples), 0.7)


#: The Pareto k-hat classes of every view (ArviZ's PSIS-LOO table): reliable up to the
#: threshold, unreliable up to 1, and beyond 1 (an infinite-variance ratio).
KHAT_CLASSES = ("good", "bad", "very bad")


def khat_classes(khat, threshold: float) -> np.ndarray:
    """ArviZ's PSIS-LOO class of every Pareto k-hat (for the text, HTML and figures).

    ``"good"``: ``k <= threshold`` (and ``-inf``); ``"bad"``: up to 1; ``"very bad"``:
    above 1; ``""``: NaN (pruned, or refitted without weights).

    Examples
    --------
    >>> from pymc_edp.base.psis import khat_classes
    >>> khat_classes([0.2, 0.69, 0.8, 1.5, float("nan")], 0.7).tolist()
    ['good', 'good', 'bad', 'very bad', '']
    """
    k = np.asarray(khat, dtype=float)
    out = np.full(k.shape, "", dtype=object)
    known = ~np.isnan(k)
    out[known & (k <= threshold)] = "good"
    out[known & (k > threshold) & (k <= 1)] = "bad"
    out[known & (k > 1)] = "very bad"
    return out


def khat_table(khat, threshold: float) -> tuple[list[tuple[str, str, int, float]], int]:
    """Counts of the k-hat classes, as every view prints them.

    Returns
    -------
    rows : list of (range, class, count, percent)
        One row per class of :data:`KHAT_CLASSES`; percent of the neighbours with a k-hat.
    not_computed : int
        Neighbours without a k-hat.

    Examples
    --------
    >>> from pymc_edp.base.psis import khat_table
    >>> rows, missing = khat_table([0.2, 0.8, float("nan")], 0.7)
    >>> rows[0], rows[1][2:], missing
    (('(-Inf, 0.70]', 'good', 1, 50.0), (1, 50.0), 1)
    """
    classes = khat_classes(khat, threshold)
    known = int(np.sum(classes != ""))
    ranges = (f"(-Inf, {threshold:.2f}]", f"({threshold:.2f}, 1]", "(1, Inf)")
    rows = []
    for rng, cls in zip(ranges, KHAT_CLASSES, strict=True):
        count = int(np.sum(classes == cls))
        rows.append((rng, cls, count, 100 * count / max(known, 1)))
    return rows, int(classes.size - known)
