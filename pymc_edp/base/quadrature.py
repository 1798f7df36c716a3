"""Adaptive 1-D quadrature of many log-densities at once: ``log of the integral of exp(f)``.

:func:`log_integrals` integrates ``exp(f_j(t))`` over the real line for many problems ``j``
(a record at a posterior draw) with one callback that evaluates them at any points. Each
problem is first searched on a grid around a centre, in steps of its scale: the grid is
refined until the peak is sampled and widened until ``f`` has fallen :data:`TAIL` nats
below its maximum at both ends (the mass beyond is below ``exp(-TAIL)`` of the peak's).
The interval found is then split into panels integrated by the 15-point Gauss-Kronrod rule;
the panels whose error estimates (the difference of the Kronrod and the embedded 7-point
Gauss values [1]_) exceed their share are halved until the relative error is below ``rtol``.
The edges of a support (``f = -inf`` beyond them) are found by bisection and made panel
edges. A kink slows the convergence, and next to a panel's edge escapes the error estimate:
there the error is about 1e-4 at worst. Points where ``f`` is NaN count as outside the
support.

References
----------
.. [1] Piessens, R., de Doncker-Kapenga, E., Überhuber, C. and Kahaner, D. "QUADPACK: A
   Subroutine Package for Automatic Integration." Springer, 1983.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

__all__ = ["GK15", "QuadratureResult", "log_integrals"]

#: Nats below the maximum at which the search stops: the mass beyond is under exp(-TAIL).
TAIL = 45.0
#: Nats the neighbours of the grid's maximum may fall below it (else the grid is refined):
#: the peak is resolved, a step is at most about twice its scale.
_PEAK = 2.0
#: Doublings of the search grid's step beyond its uniform part (more where mass is left).
_OUTWARD = 6

#: Kronrod nodes (non-negative half), Kronrod weights, and the weights of the embedded
#: 7-point Gauss rule on the odd-indexed nodes (QUADPACK's ``qk15``).
_XGK = np.array(
    [
        0.991455371120812639206854697526329,
        0.949107912342758524526189684047851,
        0.864864423359769072789712788640926,
        0.741531185599394439863864773280788,
        0.586087235467691130294144845693013,
        0.405845151377397166906606412076961,
        0.207784955007898467600689403773245,
        0.000000000000000000000000000000000,
    ]
)
_WGK = np.array(
    [
        0.022935322010529224963732008058970,
        0.063092092629978553290700663189204,
        0.104790010322250183839876322541518,
        0.140653259715525918745189590510238,
        0.169004726639267902826583426598550,
        0.190350578064785409913256402421014,
        0.204432940075298892414161999234649,
        0.209482141084727828012999174891714,
    ]
)
_WG = np.array(
    [
        0.129484966168869693270611432679082,
        0.279705391489276667901467771423780,
        0.381830050505118944950369775488975,
        0.417959183673469387755102040816327,
    ]
)


def _gk15_tables():
    nodes = np.concatenate([-_XGK[:-1], _XGK[::-1]])  # 15 nodes on [-1, 1], ascending
    kronrod = np.concatenate([_WGK[:-1], _WGK[::-1]])
    gauss_half = np.zeros(8)
    gauss_half[1::2] = _WG
    return nodes, kronrod, np.concatenate([gauss_half[:-1], gauss_half[::-1]])


#: ``(nodes, Kronrod weights, Gauss weights)`` of the 15-point rule on [-1, 1].
GK15 = _gk15_tables()


@dataclass(frozen=True)
class QuadratureResult:
    """Per problem: ``log_z``, its relative error estimate, evaluations used, convergence."""

    log_z: np.ndarray
    error: np.ndarray
    n_evals: np.ndarray
    converged: np.ndarray


def _evaluate(logf, ids: np.ndarray, t: np.ndarray) -> np.ndarray:
    out = np.asarray(logf(ids, t), dtype=np.float64).reshape(t.shape)
    return np.where(np.isnan(out), -np.inf, out)


def _search(logf, centre, scale, *, half_width, max_rounds, counts):
    """Per problem ``(a, b, peak, grids)``: where all but exp(-TAIL) of the mass lies.

    ``peak`` is the highest grid value, ``grids`` the final grid ``(t, f, step)`` in ``[a, b]``
    (None where nothing was found): uniform over ``half_width`` steps of ``scale`` about the
    centre, then doubling its steps outwards.
    """
    m = centre.size
    centre, scale = centre.astype(float).copy(), scale.astype(float).copy()
    w = float(half_width)
    reach = np.full(m, _OUTWARD)
    a, b, peak = np.full(m, np.nan), np.full(m, np.nan), np.full(m, -np.inf)
    grids: list = [None] * m
    todo = np.arange(m)
    for _ in range(max_rounds):
        if not todo.size:
            break
        outer = w * 2.0 ** np.arange(1, int(reach[todo].max()) + 1)
        u = np.concatenate([-outer[::-1], np.arange(-w, w + 1), outer])
        uniform = np.abs(u) <= w
        grid = centre[todo, None] + scale[todo, None] * u[None, :]
        values = _evaluate(logf, np.repeat(todo, u.size), grid.ravel()).reshape(grid.shape)
        counts[todo] += u.size
        top = values.max(axis=1)
        arg = values.argmax(axis=1)
        again = []
        for row, j in enumerate(todo):
            f, i = values[row], arg[row]
            if top[row] == np.inf:  # not a density: give up
                continue
            if top[row] == -np.inf:  # the support falls between grid points: a finer grid
                scale[j] /= 8.0  # reaching as far (three more doublings)
                reach[j] += 3
                again.append(j)
                continue
            if not uniform[i]:  # the mass is far out: look there
                centre[j], scale[j] = grid[row, i], scale[j] * np.abs(u[i]) / w
                again.append(j)
                continue
            near = f[[i - 1, i + 1]]
            if not (np.nanmax(near) >= top[row] - _PEAK):  # unresolved (or -inf) neighbours
                centre[j], scale[j] = _vertex(grid[row, i - 1 : i + 2], f[i - 1 : i + 2])
                again.append(j)
                continue
            above = np.flatnonzero(f > top[row] - TAIL)
            lo, hi = above[0], above[-1]
            if lo == 0 or hi == u.size - 1:  # mass beyond the grid: further out
                reach[j] += _OUTWARD
                again.append(j)
                continue
            a[j], b[j], peak[j] = grid[row, lo - 1], grid[row, hi + 1], top[row]
            grids[j] = (grid[row, lo - 1 : hi + 2].copy(), f[lo - 1 : hi + 2].copy(), scale[j])
        todo = np.asarray(again, dtype=np.int64)
    return a, b, peak, grids


def _vertex(t: np.ndarray, f: np.ndarray) -> tuple[float, float]:
    """Centre and step of a finer grid about a peak seen at three points ``t``."""
    h = t[1] - t[0]
    fallback = (float(t[1]), float(h / 8.0))
    if not np.isfinite(f).all():
        return fallback
    curvature = (f[0] - 2 * f[1] + f[2]) / h**2
    if not curvature < 0:
        return fallback
    sd = 1.0 / np.sqrt(-curvature)
    shift = np.clip(-(f[2] - f[0]) / (2 * h * curvature), -h, h)
    return float(t[1] + shift), float(np.clip(sd, h * 1e-9, h / 8.0))


def log_integrals(
    logf: Callable[[np.ndarray, np.ndarray], np.ndarray],
    centre: np.ndarray,
    scale: np.ndarray,
    *,
    rtol: float = 1e-9,
    panel_steps: float = 3.0,
    max_panels: int = 256,
    half_width: float = 12.0,
    max_rounds: int = 16,
) -> QuadratureResult:
    """``log`` of the integral of ``exp(f_j)`` over the real line, for every problem ``j``.

    Parameters
    ----------
    logf : callable
        ``logf(ids, t)``: ``f_ids[k](t[k])`` for flat arrays ``ids`` (problem indices) and
        ``t`` (points); NaN and ``-inf`` mean outside the support.
    centre, scale : ndarray, shape (m,)
        Where each problem's mass is looked for first (a point of its support: a support
        that no search point hits is not found), and in steps of what.
    rtol : float, default 1e-9
        Target relative error of each integral (the G7-K15 estimate, summed over panels).
    panel_steps : float, default 3.0
        Width of the first panels about the peak, in steps of the search's final grid.
    max_panels : int, default 256
        Panels per problem at most; a problem that needs more is not converged.
    half_width : float, default 12.0
        Half-width of the uniform part of the search grid, in steps of ``scale``.
    max_rounds : int, default 16
        Rounds of refining or widening the search grid.

    Returns
    -------
    QuadratureResult
        ``log_z`` is NaN where the search found no interval.

    Examples
    --------
    A Gaussian of variance 4 has ``log Z = log(sqrt(2 pi) 2)``:

    >>> from pymc_edp.base.quadrature import log_integrals
    >>> f = lambda ids, t: -0.5 * (t - 1.0) ** 2 / 4.0
    >>> res = log_integrals(f, np.array([0.0]), np.array([1.0]))
    >>> bool(np.isclose(res.log_z[0], np.log(np.sqrt(2 * np.pi) * 2.0), rtol=0, atol=1e-12))
    True
    """
    centre = np.asarray(centre, dtype=float).ravel()
    scale = np.asarray(scale, dtype=float).ravel()
    if centre.shape != scale.shape:
        raise ValueError("centre and scale must have one value per problem")
    bad = ~(np.isfinite(scale) & (scale > 0) & np.isfinite(centre))
    if bad.any():
        raise ValueError("every problem needs a finite centre and a positive scale")
    m = centre.size
    counts = np.zeros(m, dtype=np.int64)
    a, b, peak, grids = _search(
        logf, centre, scale, half_width=half_width, max_rounds=max_rounds, counts=counts
    )
    found = np.isfinite(a) & np.isfinite(b)
    n_evals = counts.copy()
    nodes, wk, wg = GK15
    pid, lo, hi = _first_panels(logf, grids, panel_steps, n_evals)
    k_val, err = _panels(logf, pid, lo, hi, peak, nodes, wk, wg, n_evals)
    total = np.full(m, np.nan)
    error = np.full(m, np.inf)
    converged = np.zeros(m, dtype=bool)
    while pid.size:
        total_k = np.bincount(pid, k_val, minlength=m)
        total_e = np.bincount(pid, err, minlength=m)
        n_panels = np.bincount(pid, minlength=m)
        done = found & (total_e <= rtol * np.abs(total_k))
        capped = found & ~done & (n_panels >= max_panels)
        settle = done | capped
        total[settle], error[settle] = total_k[settle], total_e[settle]
        converged |= done
        found &= ~settle
        keep = found[pid]
        if not keep.any():
            break
        pid, lo, hi, k_val, err = pid[keep], lo[keep], hi[keep], k_val[keep], err[keep]
        # halve the panels holding more than their share of their problem's error
        share = total_e[pid] / n_panels[pid]
        split = err >= share
        mid = 0.5 * (lo[split] + hi[split])
        new_pid = np.concatenate([pid[split], pid[split]])
        new_lo = np.concatenate([lo[split], mid])
        new_hi = np.concatenate([mid, hi[split]])
        nk, ne = _panels(logf, new_pid, new_lo, new_hi, peak, nodes, wk, wg, n_evals)
        stay = ~split
        pid = np.concatenate([pid[stay], new_pid])
        lo = np.concatenate([lo[stay], new_lo])
        hi = np.concatenate([hi[stay], new_hi])
        k_val = np.concatenate([k_val[stay], nk])
        err = np.concatenate([err[stay], ne])
    with np.errstate(divide="ignore", invalid="ignore"):
        log_z = peak + np.log(total)
        rel = error / total
    return QuadratureResult(log_z, rel, n_evals, converged)


def _first_panels(logf, grids, panel_steps, n_evals):
    """Flat ``(problem, lower, upper)`` first panels, from each problem's search grid.

    Edges: every ``panel_steps``-th point of the uniform part, every point of the doubling
    part (a spike in a wide panel would fool the error estimate), and the support's edges.
    """
    pid, lo, hi = [], [], []
    inside, outside, owner = [], [], []
    for j, found in enumerate(grids):
        if found is None:
            continue
        t, f, step = found
        keep = np.zeros(t.size, dtype=bool)
        keep[[0, -1]] = True
        fine = np.abs(np.diff(t)) <= step * 1.0000001
        run = 0
        for k in range(1, t.size - 1):
            run = run + 1 if fine[k - 1] else 0
            keep[k] = not fine[k - 1] or not fine[k] or run % int(panel_steps) == 0
        finite = np.isfinite(f)
        for k in range(t.size - 1):  # support edges between grid points
            if finite[k] != finite[k + 1]:
                keep[k] = keep[k + 1] = True
                inside.append(t[k] if finite[k] else t[k + 1])
                outside.append(t[k + 1] if finite[k] else t[k])
                owner.append(j)
        edges, alive = t[keep], finite[keep]
        for k in range(edges.size - 1):
            if alive[k] or alive[k + 1]:
                pid.append(j)
                lo.append(edges[k])
                hi.append(edges[k + 1])
    lo, hi = np.asarray(lo, dtype=float), np.asarray(hi, dtype=float)
    if inside:
        owner = np.asarray(owner, dtype=np.int64)
        edge = _bisect(logf, owner, np.asarray(inside), np.asarray(outside), n_evals)
        for j, t_in, t_out, e in zip(owner, inside, outside, edge, strict=True):
            # the panel from the last finite point to the first -inf one ends at the edge
            sel = np.flatnonzero(
                (np.asarray(pid) == j)
                & (np.minimum(lo, hi) == min(t_in, t_out))
                & (np.maximum(lo, hi) == max(t_in, t_out))
            )
            for k in sel:
                if t_in < t_out:
                    hi[k] = e
                else:
                    lo[k] = e
    return np.asarray(pid, dtype=np.int64), lo, hi


def _bisect(logf, owner, inside, outside, n_evals, steps: int = 60):
    """Where ``f`` turns ``-inf`` between ``inside`` (finite) and ``outside``, to rounding."""
    inside, outside = inside.astype(float).copy(), outside.astype(float).copy()
    for _ in range(steps):
        mid = 0.5 * (inside + outside)
        same = (mid == inside) | (mid == outside)
        if same.all():
            break
        ok = np.isfinite(_evaluate(logf, owner, mid))
        np.add.at(n_evals, owner, 1)
        inside = np.where(ok & ~same, mid, inside)
        outside = np.where(~ok & ~same, mid, outside)
    return inside


def _panels(logf, pid, lo, hi, peak, nodes, wk, wg, n_evals):
    """Kronrod value and error estimate of ``exp(f - peak)`` on each panel."""
    half = 0.5 * (hi - lo)
    t = 0.5 * (hi + lo)[:, None] + half[:, None] * nodes[None, :]
    ids = np.repeat(pid, nodes.size)
    f = _evaluate(logf, ids, t.ravel()).reshape(t.shape)
    np.add.at(n_evals, pid, nodes.size)
    g = np.exp(f - peak[pid, None])
    k_val = half * (g @ wk)
    # |K15 - G7| bounds G7's error, and K15's on a panel that resolves its integrand;
    # QUADPACK's scaled-down estimate was seen to miss kinks, so it is not used
    err = np.abs(k_val - half * (g @ wg))
    err = np.maximum(err, 50 * np.finfo(float).eps * np.abs(k_val))
    return k_val, err
