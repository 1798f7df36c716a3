"""Matrix products whose every element is computed the same way, whatever the call's shape.

The last bits of an element of BLAS ``A @ B`` depend on the call's shape (tiling), so a
log-likelihood computed in chunks would change with the chunking and a pruned audit would
not reproduce the full one bit for bit. :func:`matmul_in_order` sums over ``l`` in order,
without FMA or reassociation: an element depends on its own operands only.

Examples
--------
>>> from pymc_edp.base.products import matmul_in_order
>>> a = np.arange(6.0).reshape(2, 3)
>>> b = np.ones((3, 1))
>>> matmul_in_order(a, b)
array([[ 3.],
       [12.]])
"""

from __future__ import annotations

import numba
import numpy as np

__all__ = ["matmul2", "matmul3", "matmul_in_order"]


@numba.njit(cache=True, nogil=True, error_model="numpy")
def _batched(a, b, out):  # pragma: no cover - compiled
    # out[t, i, j] = ((a[i, 0] b[0, j] + a[i, 1] b[1, j]) + ...) in this order, the loop over
    # i innermost (vectorised lanes compute the same sums as scalar code: no reassociation,
    # no fused multiply-add without fastmath)
    n_batch, m, n = out.shape
    k = a.shape[2]
    one_a = a.shape[0] == 1
    one_b = b.shape[0] == 1
    at = np.empty((a.shape[0], k, m))
    for t in range(a.shape[0]):
        for i in range(m):
            for q in range(k):
                at[t, q, i] = a[t, i, q]
    col = np.empty(m)
    for t in range(n_batch):
        ta = 0 if one_a else t
        tb = 0 if one_b else t
        for j in range(n):
            if k == 0:
                col[:] = 0.0
            else:
                b0 = b[tb, 0, j]
                for i in range(m):
                    col[i] = at[ta, 0, i] * b0
            for q in range(1, k):
                bq = b[tb, q, j]
                for i in range(m):
                    col[i] = col[i] + at[ta, q, i] * bq
            for i in range(m):
                out[t, i, j] = col[i]
    return out


@numba.njit(cache=True, nogil=True, error_model="numpy")
def matmul3(a, b):  # pragma: no cover - compiled
    """``a @ b`` of ``(Ba, m, k)`` and ``(Bb, k, n)`` float64 arrays (``Ba``, ``Bb`` 1 or B)."""
    n_batch = max(a.shape[0], b.shape[0])
    out = np.empty((n_batch, a.shape[1], b.shape[2]))
    # contiguous operands: views with unit dimensions (PyTensor's ExpandDims) compile to
    # generic strided loops otherwise
    return _batched(np.ascontiguousarray(a), np.ascontiguousarray(b), out)


@numba.njit(cache=True, nogil=True, error_model="numpy")
def matmul2(a, b):  # pragma: no cover - compiled
    """``a @ b`` of ``(m, k)`` and ``(k, n)`` float64 arrays."""
    out = np.empty((1, a.shape[0], b.shape[1]))
    a3 = (
        a.reshape((1, a.shape[0], a.shape[1]))
        if a.flags.c_contiguous
        else np.ascontiguousarray(a).reshape((1, a.shape[0], a.shape[1]))
    )
    b3 = (
        b.reshape((1, b.shape[0], b.shape[1]))
        if b.flags.c_contiguous
        else np.ascontiguousarray(b).reshape((1, b.shape[0], b.shape[1]))
    )
    return _batched(a3, b3, out)[0]


def _stacked(x: np.ndarray, batch: tuple, size: int) -> np.ndarray:
    """``x`` as ``(size or 1, rows, cols)``, without materialising a broadcast batch."""
    if int(np.prod(x.shape[:-2], dtype=np.int64)) == 1:
        return x.reshape(1, *x.shape[-2:])
    return np.broadcast_to(x, (*batch, *x.shape[-2:])).reshape(size, *x.shape[-2:])


def matmul_in_order(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` (NumPy's ``matmul`` semantics, batch dimensions broadcast), summed in order.

    Parameters
    ----------
    a : ndarray, shape (..., m, k)
    b : ndarray, shape (..., k, n)

    Returns
    -------
    ndarray, shape (..., m, n), float64
        Equal to ``a @ b`` to rounding; each element is the same bits in any call.
    """
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    squeeze_a = a.ndim == 1
    squeeze_b = b.ndim == 1
    if squeeze_a:
        a = a[None, :]
    if squeeze_b:
        b = b[:, None]
    if a.shape[-1] != b.shape[-2]:
        raise ValueError(f"matmul: inner dimensions differ, {a.shape} and {b.shape}")
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    m, n = a.shape[-2], b.shape[-1]
    size = int(np.prod(batch, dtype=np.int64))
    out = _batched(_stacked(a, batch, size), _stacked(b, batch, size), np.empty((size, m, n)))
    out = out.reshape(*batch, m, n)
    if squeeze_b:
        out = out[..., 0]
    if squeeze_a:
        out = out[..., 0, :] if not squeeze_b else out[..., 0]
    return out
