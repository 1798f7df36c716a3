"""Log-densities of the common GLM likelihoods on ``(S, k)`` blocks, and their ranges.

The kernels behind the fast path of :class:`~pymc_edp.model.stream.ModelColumns`: from
``k`` records' observed values and the likelihood's parameters at ``S`` draws (each
broadcastable to ``(S, k)``) they compute what PyTensor's compiled ``logp`` would (its
formulas after its stabilising rewrites), and the range over draws of each record's
log-density or replacement log ratio. Each family is one :class:`Family` entry of
:data:`FAMILIES`. Every function returns None for a block it does not handle (values
outside the support, invalid parameters, a non-finite result): PyTensor computes it.

A family whose draws enter only through a last parameter ``q`` in which it is concave
(Bernoulli, Binomial with ``n`` fixed, Poisson) takes the range in one pass of four
reductions: the maximum is at the draw nearest the mode from either side, the minimum at
the extreme ``q`` (a log ratio is monotone in ``q``). Other families reduce the block.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numba
import numpy as np
from scipy import special

__all__ = [
    "FAMILIES",
    "Family",
    "RangeState",
    "extreme_rows",
    "half_erfc",
    "lgamma",
    "logp",
    "logp_range",
]


@dataclass(frozen=True)
class Family:
    """One likelihood of the fast path: an entry of :data:`FAMILIES`.

    Attributes
    ----------
    name : str
        Its key in :data:`FAMILIES`.
    rv_op : str
        Class name of its op in ``pytensor.tensor.random.basic`` (``"NormalRV"``).
    params : tuple of str
        The op's parameters in order; the last, ``q``, may come through a link.
    logp : callable
        ``logp(y, out, params, *, link, style, cache, single)``: the ``(S, k)`` log-densities
        written into ``out``, or None. ``y`` is ``(k,)``, ``params`` 2-d float64 arrays
        broadcastable to ``out``, ``style`` the PyMC major version, ``cache`` a dict kept
        between the blocks of one chunk (or None), ``single[i]`` whether parameter ``i`` was
        float32. Runs under ``np.errstate(all="ignore")``.
    links : tuple of str
        The links of ``q`` that ``logp`` accepts.
    peel, peel_pymc5 : tuple of str
        Graph patterns peeled off ``q`` in order (:data:`pymc_edp.model.families.PATTERNS`);
        ``peel_pymc5``, if given, replaces ``peel`` under PyMC 5.
    mode : callable, optional
        ``mode(link, y, params) -> (k,)``: where the log-density peaks in a concave ``q``.
    range : callable, optional
        ``range(state, params, out) -> bool or None``: a fused :meth:`RangeState.update`
        (None: not for this link).
    """

    name: str
    rv_op: str
    params: tuple[str, ...]
    logp: Callable
    links: tuple[str, ...] = ("identity",)
    peel: tuple[str, ...] = ()
    peel_pymc5: tuple[str, ...] | None = None
    mode: Callable | None = None
    range: Callable | None = None


# Parameters are 2-d arrays broadcastable to the block's (S, k): a[s if rows else 0, j * cols]
# with ``rows = a.shape[0] > 1`` and ``cols = a.shape[1] > 1``. Kernels that finish a block
# return how many of its values are not finite.
_JIT = {"cache": True, "nogil": True, "error_model": "numpy"}


@numba.njit(**_JIT)
def _minmax(a, b, mn, mx):  # pragma: no cover - compiled
    """Fold column min / max of ``a`` (``b - a`` unless ``b`` is None) in; False if not finite."""
    n_s, k = a.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            v = a[s, j] if b is None else b[s, j] - a[s, j]
            bad += not (abs(v) < np.inf)
            mn[j] = min(mn[j], v)
            mx[j] = max(mx[j], v)
    return bad == 0


@numba.njit(**_JIT)
def _bracket(a, mode, mn, mx, lo, hi):  # pragma: no cover - compiled
    """Per column, folded in: min, max, largest value <= mode, smallest value >= mode."""
    n_s, k = a.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            v = a[s, j]
            m = mode[j]
            bad += not (abs(v) < np.inf)
            mn[j] = min(mn[j], v)
            mx[j] = max(mx[j], v)
            lo[j] = max(lo[j], v if v <= m else -np.inf)
            hi[j] = min(hi[j], v if v >= m else np.inf)
    return bad == 0


def extreme_rows(a) -> tuple[int, ...]:
    """Rows (draws) of the smallest and largest values of a 2-d block: where a link loses most."""
    a = np.asarray(a)
    if a.ndim != 2 or a.shape[0] <= 1 or a.size == 0:
        return ()
    k = a.shape[1]  # NumPy's SIMD reductions (a NaN, if any, is found as an extreme)
    return int(np.argmin(a)) // k, int(np.argmax(a)) // k


@numba.njit(**_JIT)
def _half_erfc(z, out):  # pragma: no cover - compiled
    flat_z = z.ravel()
    flat_o = out.ravel()
    for i in range(flat_z.size):
        flat_o[i] = 0.5 * math.erfc(flat_z[i])
    return out


@numba.njit(**_JIT)
def _lgamma(x, out):  # pragma: no cover - compiled
    flat_x = x.ravel()
    flat_o = out.ravel()
    for i in range(flat_x.size):
        flat_o[i] = math.lgamma(flat_x[i])
    return out


@numba.njit(inline="always", **_JIT)
def _at(a, s, j):  # pragma: no cover - compiled
    """``a[s, j]`` of a 2-d parameter broadcast to the block (see above)."""
    return a[s if a.shape[0] > 1 else 0, j if a.shape[1] > 1 else 0]


@numba.njit(inline="always", **_JIT)
def _log_probs(a, b, s, j, logit):  # pragma: no cover - compiled
    """``(log p, log(1 - p))`` at ``(s, j)``: ``(a, b)``; logit: from ``(q, log1p(e^-|q|))``."""
    if logit:
        x, t = a[s, j], b[s, j]
        return -(max(-x, 0.0) + t), -(max(x, 0.0) + t)
    return a[s, j], b[s, j]


@numba.njit(**_JIT)
def _negabs(q, out):  # pragma: no cover - compiled
    n_s, k = q.shape
    for s in range(n_s):
        for j in range(k):
            out[s, j] = -abs(q[s, j])
    return out


@numba.njit(**_JIT)
def _k_normal(y, mu, sigma, log_sigma, out):  # pragma: no cover - compiled
    """``(-0.5 ((y - mu) / sigma)^2 - log(sqrt(2 pi))) - log(sigma)``."""
    n_s, k = out.shape
    c = 0.5 * math.log(2.0 * math.pi)
    bad = 0
    for s in range(n_s):
        for j in range(k):
            z = (y[j] - _at(mu, s, j)) / _at(sigma, s, j)
            v = (-0.5 * (z * z) - c) - _at(log_sigma, s, j)
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(**_JIT)
def _k_t_z(y, mu, lam, nu, out):  # pragma: no cover - compiled
    """``lam (y - mu)^2 / nu``."""
    n_s, k = out.shape
    for s in range(n_s):
        for j in range(k):
            d = y[j] - _at(mu, s, j)
            out[s, j] = _at(lam, s, j) * (d * d) / _at(nu, s, j)
    return out


@numba.njit(**_JIT)
def _k_t_finish(log1p_z, const, half_nu1, out):  # pragma: no cover - compiled
    """``const - (nu + 1) / 2 * log1p(z)``."""
    n_s, k = out.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            v = _at(const, s, j) - _at(half_nu1, s, j) * log1p_z[s, j]
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(**_JIT)
def _k_bernoulli(y, a, b, logit, out):  # pragma: no cover - compiled
    """``log p`` at y = 1, ``log(1 - p)`` at y = 0 (``a``, ``b`` as :func:`_log_probs`)."""
    n_s, k = out.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            log_p, log_1mp = _log_probs(a, b, s, j, logit)
            v = log_p if y[j] == 1.0 else log_1mp
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(**_JIT)
def _k_binomial(y, n, bl, a, b, logit, out):  # pragma: no cover - compiled
    """``(binomln + y log p) + (n - y) log(1 - p)``."""
    n_s, k = out.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            log_p, log_1mp = _log_probs(a, b, s, j, logit)
            v = (_at(bl, s, j) + y[j] * log_p) + (_at(n, s, j) - y[j]) * log_1mp
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(**_JIT)
def _k_poisson(y, lg, a, b, out):  # pragma: no cover - compiled
    """``(y a - lgamma(y + 1)) - b``: (a, b) = (q, exp(q)) or (log(mu), mu)."""
    n_s, k = out.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            v = (y[j] * a[s, j] - lg[j]) - b[s, j]
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(inline="always", **_JIT)
def _negbin_at(binomln, y, n, log_p, log_1mp):  # pragma: no cover - compiled
    return (binomln + y * log_1mp) + n * log_p


@numba.njit(**_JIT)
def _k_negbin(y, n, table, index, a, b, logit, out):  # pragma: no cover - compiled
    """``(binomln + y log(1 - p)) + n log p``, ``binomln = table[s, index[j]]``."""
    n_s, k = out.shape
    tr = table.shape[0] > 1
    bad = 0
    for s in range(n_s):
        ts = s if tr else 0
        for j in range(k):
            log_p, log_1mp = _log_probs(a, b, s, j, logit)
            v = _negbin_at(table[ts, index[j]], y[j], _at(n, s, j), log_p, log_1mp)
            out[s, j] = v
            bad += not (abs(v) < np.inf)
    return bad


@numba.njit(**_JIT)
def _r_negbin_logit(y, y2, n, table, index, index2, q, t, mn, mx):  # pragma: no cover
    """Column min / max of the negative binomial logit log-density (or log ratio at ``y2``)."""
    n_s, k = q.shape
    tr = table.shape[0] > 1
    ratio = y2.size > 0
    bad = 0
    for s in range(n_s):
        ts = s if tr else 0
        for j in range(k):
            log_p, log_1mp = _log_probs(q, t, s, j, True)
            a = _at(n, s, j)
            v = _negbin_at(table[ts, index[j]], y[j], a, log_p, log_1mp)
            if ratio:
                v = _negbin_at(table[ts, index2[j]], y2[j], a, log_p, log_1mp) - v
            bad += not (abs(v) < np.inf)
            mn[j] = min(mn[j], v)
            mx[j] = max(mx[j], v)
    return bad == 0


@numba.njit(**_JIT)
def _k_negbin5_ratios(n, p, r1, r2):  # pragma: no cover - compiled
    """PyMC 5: mu = n (1 - p) / p; ``r1 = mu / (mu + n)``, ``r2 = n / (mu + n)``."""
    n_s, k = r1.shape
    bad = 0
    for s in range(n_s):
        for j in range(k):
            a = _at(n, s, j)
            mu = a * (1.0 - p[s, j]) / p[s, j]
            bad += not (mu > 0.0)
            r1[s, j] = mu / (mu + a)
            r2[s, j] = a / (mu + a)
    return bad


@numba.njit(**_JIT)
def _negbin_table(y_u, lg_y1, n, out):  # pragma: no cover - compiled
    """``(lgamma(y + n) - lgamma(y + 1)) - lgamma(n)`` for the distinct ``y_u`` at each n."""
    for s in range(n.size):
        lg_n = math.lgamma(n[s])
        for u in range(y_u.size):
            out[s, u] = (math.lgamma(y_u[u] + n[s]) - lg_y1[u]) - lg_n
    return out


def lgamma(x) -> np.ndarray:
    """The C library's ``lgamma`` elementwise (PyTensor's ``gammaln``), float64."""
    x = np.ascontiguousarray(x, dtype=np.float64)
    return _lgamma(x, np.empty_like(x))


def half_erfc(z) -> np.ndarray:
    """``0.5 * erfc(z)`` with the C library's ``erfc`` (PyTensor's compiled code's), float64."""
    z = np.ascontiguousarray(z, dtype=np.float64)
    return _half_erfc(z, np.empty_like(z))


def _softplus_t(q, cache=None) -> np.ndarray:
    """``log1p(exp(-|q|))``, NumPy's SIMD exp/log1p; kept in ``cache`` for the same ``q``."""
    if cache is not None and cache.get("softplus_q") is q:
        return cache["softplus_t"]
    t = _negabs(q, np.empty_like(q))
    np.exp(t, out=t)
    np.log1p(t, out=t)
    if cache is not None:
        cache.update(softplus_q=q, softplus_t=t)
    return t


def _probabilities(q, link: str, cache=None):
    """The ``(a, b)`` of :func:`_log_probs` for the block ``q``; None if ``p`` is not in [0, 1]."""
    if link == "logit":
        return q, _softplus_t(q, cache)
    if link == "identity" and not np.all((q >= 0) & (q <= 1)):
        return None
    p = half_erfc(q) if link == "erfc" else q
    return np.log(p), np.log1p(-p)


def _finite(*arrays) -> bool:
    return all(bool(np.isfinite(a).all()) for a in arrays)


def _c2(a) -> np.ndarray:
    a = np.asarray(a, dtype=np.float64)
    if a.ndim < 2:
        a = a.reshape(1, -1)
    return np.ascontiguousarray(a)


def _full(q, shape) -> np.ndarray:
    return q if q.shape == shape else np.ascontiguousarray(np.broadcast_to(q, shape))


def _integral(y) -> bool:
    return bool(np.all(y == np.floor(y)))


def _in(x, single: bool):
    """``x`` rounded to float32 if its parameter is: PyTensor computes in float32 then."""
    return x.astype(np.float32).astype(np.float64) if single else x


def _normal(y, out, params, *, single, **_):
    mu, sigma = params
    if not (_finite(sigma) and np.all(sigma > 0)):
        return None
    bad = _k_normal(y, mu, sigma, _in(np.log(sigma), single[1]), out)
    return None if bad else out


def _student_t(y, out, params, *, single, **_):
    nu, mu, sigma = params
    if not (_finite(nu, sigma) and np.all(sigma > 0) and np.all(nu > 0)):
        return None
    lam = _in(sigma**-2.0, single[2])
    half_nu1 = _in((nu + 1.0) / 2.0, single[0])
    lg_a = _in(lgamma(half_nu1), single[0])
    lg_b = _in(lgamma(_in(nu / 2.0, single[0])), single[0])
    # gammaln((nu + 1) / 2) + 0.5 log(lam / (nu pi)) - gammaln(nu / 2), on the small shapes
    const = _c2((lg_a + 0.5 * np.log(lam / (nu * np.pi))) - lg_b)
    z = np.empty(out.shape)
    _k_t_z(y, mu, _c2(lam), nu, z)
    np.log1p(z, out=z)
    bad = _k_t_finish(z, const, _c2(half_nu1), out)
    return None if bad else out


def _bernoulli(y, out, params, *, link, **_):
    if not np.all((y == 0) | (y == 1)):
        return None
    probs = _probabilities(_full(params[0], out.shape), link)
    if probs is None or _k_bernoulli(y, *probs, link == "logit", out):
        return None
    return out


def _binomial(y, out, params, *, link, **_):
    n, q = params
    if not (_finite(n) and np.all(n >= 0) and np.all((y >= 0) & (y <= n)) and _integral(y)):
        return None
    probs = _probabilities(_full(q, out.shape), link)
    if probs is None:
        return None
    yy = y[None, :]  # PyMC's binomln(n, y) = factln(n) - factln(y) - factln(n - y)
    bl = _c2((lgamma(n + 1.0) - lgamma(yy + 1.0)) - lgamma(n - yy + 1.0))
    return None if _k_binomial(y, n, bl, *probs, link == "logit", out) else out


def _binary_mode(link, y, params):
    """Where a Bernoulli's or Binomial's log-density peaks in ``q``."""
    n = 1.0 if len(params) == 1 else np.broadcast_to(params[0], (1, y.size))[0]
    r = y / n
    if link == "logit":
        return np.log(y) - np.log(n - y)
    if link == "erfc":  # p = erfc(z) / 2 decreasing in z
        return special.erfcinv(2.0 * r)
    return r


def _poisson(y, out, params, *, link, **_):
    if not (np.all(y >= 0) and _integral(y)):
        return None
    q = _full(params[0], out.shape)
    lg = lgamma(y + 1.0)
    if link == "log":  # y log(exp(q)) - factln(y) - exp(q)
        bad = _k_poisson(y, lg, q, np.exp(q), out)
    else:
        if not np.all(q > 0):
            return None
        bad = _k_poisson(y, lg, np.log(q), q, out)
    return None if bad else out


def _poisson_mode(link, y, params):
    return np.log(y) if link == "log" else y.copy()


def _negbin_ok(y, n, q, link, style) -> bool:
    if not (np.all(y >= 0) and _integral(y) and _finite(n) and np.all(n > 0)):
        return False
    if np.any(n > 1e10):  # PyMC switches to the Poisson limit there
        return False
    if link == "identity" and not np.all((q > 0) & (q < 1)):
        return False
    # PyMC 5's mu = exp(eta) underflows to 0 below q = 745: its check gives -inf
    return not (style == 5 and link == "logit" and np.max(q) >= 700.0)


def _negative_binomial(y, out, params, *, link, style, cache, **_):
    n, q = params
    if not _negbin_ok(y, n, q, link, style):
        return None
    q = _full(q, out.shape)
    table, index = _negbin_binomln(y, n, cache)
    if style == 5 and link == "identity":  # log(mu / (mu + n)), log(n / (mu + n))
        r1, r2 = np.empty(out.shape), np.empty(out.shape)
        if _k_negbin5_ratios(n, q, r1, r2):
            return None
        probs = np.log(r2, out=r2), np.log(r1, out=r1)
    else:
        probs = _probabilities(q, link, cache)
    return None if _k_negbin(y, n, table, index, *probs, link == "logit", out) else out


def _negbin_binomln(y, n, cache):
    """``binomln(y + n - 1, y) = table[s, index[j]]``: per distinct ``y`` if ``n`` is shared."""
    if n.shape[1] != 1:
        yy = y[None, :]
        table = _c2((lgamma(yy + n) - lgamma(yy + 1.0)) - lgamma(n))
        return table, np.arange(y.size, dtype=np.int64)
    y_u = np.unique(y)
    hit = cache is not None and cache.get("n") is not None and np.array_equal(cache["n"], n)
    if hit and np.isin(y_u, cache["y_u"]).all():
        y_u, table = cache["y_u"], cache["table"]
    else:
        if hit:
            y_u = np.union1d(y_u, cache["y_u"])
        table = np.empty((n.shape[0], y_u.size))
        _negbin_table(y_u, lgamma(y_u + 1.0), np.ascontiguousarray(n[:, 0]), table)
        if cache is not None:
            cache.update(n=n.copy(), y_u=y_u, table=table)
    return table, np.searchsorted(y_u, y).astype(np.int64)


def _negbin_range(state, params, out=None) -> bool | None:
    """:meth:`RangeState.update` of the negative binomial (logit), one fused pass."""
    if state.link != "logit":
        return None
    y, y2 = state.y, state.alt_y
    k = y.size
    n, q = (_c2(p) for p in params)
    shape = np.broadcast_shapes((1, k), n.shape, q.shape)
    ys = y if y2 is None else np.concatenate([y, y2])
    with np.errstate(all="ignore"):
        if not _negbin_ok(ys, n, q, "logit", state.style):
            return False
        q = _full(q, shape)
        table, index = _negbin_binomln(ys, n, state.cache)
        t = _softplus_t(q)
    if y2 is None:  # the columns, then their min / max (vectorises better than fused)
        if out is None or out.shape != shape or not out.flags.c_contiguous:
            out = np.empty(shape)
        if _k_negbin(y, n, table, index, q, t, True, out):
            return False
        return _minmax(out, None, state.mn, state.mx)
    return _r_negbin_logit(y, y2, n, table, index[:k], index[k:], q, t, state.mn, state.mx)


_BINARY = {"links": ("logit", "erfc", "identity"), "peel": ("sigmoid", "half_erfc")}
#: The families of the fast path by name (adding one touches only this module).
FAMILIES: dict[str, Family] = {
    family.name: family
    for family in (
        Family("normal", "NormalRV", ("mu", "sigma"), _normal),
        Family("student_t", "StudentTRV", ("nu", "mu", "sigma"), _student_t),
        Family("bernoulli", "BernoulliRV", ("q",), _bernoulli, mode=_binary_mode, **_BINARY),
        Family("binomial", "BinomialRV", ("n", "q"), _binomial, mode=_binary_mode, **_BINARY),
        Family(
            "poisson",
            "PoissonRV",
            ("q",),
            _poisson,
            links=("log", "identity"),
            peel=("exp",),
            mode=_poisson_mode,
        ),
        Family(
            "negative_binomial",
            "NegBinomialRV",
            ("n", "q"),
            _negative_binomial,
            links=("logit", "identity"),
            peel=("sigmoid",),
            peel_pymc5=("pymc5_negbin_mu",),
            range=_negbin_range,
        ),
    )
}


def logp(
    family: str,
    link: str,
    y,
    params,
    *,
    style: int = 6,
    cache: dict | None = None,
    out: np.ndarray | None = None,
) -> np.ndarray | None:
    """``(S, k)`` log-densities of ``k`` observed values at ``S`` draws of the parameters.

    Parameters
    ----------
    family : str
        A key of :data:`FAMILIES`.
    link : str
        One of the family's ``links``.
    y : array_like, shape (k,)
    params : sequence of array_like
        The family's parameters, each broadcastable to ``(S, k)``.
    style : int
        The PyMC major version whose formulas to follow (5 or 6).
    cache : dict, optional
        Reused between calls on blocks of one chunk.
    out : ndarray, optional
        C-contiguous ``(S, k)`` float64 array to write into.

    Returns
    -------
    ndarray, shape (S, k), or None
        None when the kernels do not handle the block.
    """
    fam = FAMILIES[family]
    y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
    single = [np.asarray(p).dtype == np.float32 for p in params]
    params = [_c2(p) for p in params]
    shape = np.broadcast_shapes((1, y.size), *(p.shape for p in params))
    if not _finite(y) or len(shape) != 2 or len(params) != len(fam.params):
        return None
    if out is None or out.shape != shape or not out.flags.c_contiguous:
        out = np.empty(shape)
    with np.errstate(all="ignore"):
        return fam.logp(y, out, params, link=link, style=style, cache=cache, single=single)


class RangeState:
    """The range over draws of each record's log-density, one block of draws at a time.

    Fold blocks in with :meth:`update`, then read :meth:`result`. Arguments as
    :func:`logp_range`.
    """

    def __init__(self, family, link, y, alt_y=None, *, style: int = 6, cache=None):
        self.family, self.link, self.style, self.cache = family, link, style, cache
        self.fam = FAMILIES[family]
        self.y = np.ascontiguousarray(y, dtype=np.float64).reshape(-1)
        self.alt_y = (
            None if alt_y is None else np.ascontiguousarray(alt_y, dtype=np.float64).reshape(-1)
        )
        k = self.y.size
        self.mn, self.mx = np.full(k, np.inf), np.full(k, -np.inf)
        self.lo, self.hi = np.full(k, -np.inf), np.full(k, np.inf)
        self.scalar = None  # whether the draws enter only through q: decided by the first block
        self.fixed = None
        self.ok = True

    def update(self, params, out=None) -> bool:
        """Fold in a block of draws (``params`` as :func:`logp`); False: unhandled."""
        if not self.ok:
            return False
        raw, params = params, [_c2(p) for p in params]
        k = self.y.size
        if self.scalar is None:
            self.scalar = self.fam.mode is not None and all(p.shape[0] == 1 for p in params[:-1])
            if self.scalar:
                with np.errstate(all="ignore"):
                    mode = self.fam.mode(self.link, self.y, params)
                self.mode = np.ascontiguousarray(mode, dtype=np.float64)
                self.fixed = [np.broadcast_to(p, (1, k)) for p in params[:-1]]
        if self.scalar:
            q = params[-1]
            self.ok = _bracket(
                _full(q, (q.shape[0], k)), self.mode, self.mn, self.mx, self.lo, self.hi
            )
            return self.ok
        if self.fam.range is not None:
            ok = self.fam.range(self, raw, out)
            if ok is not None:
                self.ok = ok
                return ok
        kw = {"style": self.style, "cache": self.cache}
        cols = logp(self.family, self.link, self.y, raw, out=out, **kw)
        if cols is None:
            self.ok = False
        elif self.alt_y is None:
            self.ok = _minmax(cols, None, self.mn, self.mx)
        else:
            other = logp(self.family, self.link, self.alt_y, raw, **kw)
            self.ok = other is not None and _minmax(cols, other, self.mn, self.mx)
        return self.ok

    def result(self) -> np.ndarray | None:
        """``(k,)`` ranges: at least the range of :func:`logp`'s columns; None: unhandled."""
        if not self.ok or self.scalar is None:
            return None
        if not self.scalar:
            return self.mx - self.mn
        mn, mx = self.mn, self.mx
        lo = np.where(self.lo == -np.inf, mn, self.lo)
        hi = np.where(self.hi == np.inf, mx, self.hi)
        points = np.stack([mn, mx, lo, hi])  # (4, k): the draws' q that attain min and max
        kw = {"style": self.style}
        f = logp(self.family, self.link, self.y, [*self.fixed, points], **kw)
        if f is None:
            return None
        if self.alt_y is not None:
            f_alt = logp(self.family, self.link, self.alt_y, [*self.fixed, points], **kw)
            if f_alt is None:
                return None
            f = f_alt - f  # monotone in q: extremes at mn and mx, among the points
        return f.max(axis=0) - f.min(axis=0)


def logp_range(
    family: str, link: str, y, params, alt_y=None, *, style: int = 6, cache: dict | None = None
) -> np.ndarray | None:
    """``(k,)`` ``max_s - min_s`` of each record's log-density, or None as :func:`logp`.

    With ``alt_y`` (replacement values), of ``f_alt_y - f_y``. At least the range of
    :func:`logp`'s columns, up to the rounding of evaluating them again. Other arguments as
    :func:`logp`.
    """
    state = RangeState(family, link, y, alt_y, style=style, cache=cache)
    state.update(params)
    return state.result()
