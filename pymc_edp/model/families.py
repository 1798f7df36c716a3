"""Fast streamed log-likelihoods of the GLM families of :data:`pymc_edp.base.glm.FAMILIES`.

:func:`recognise` finds the family of a streaming graph's observed variable by its random
variable op, compiles the graph of its parameters per (draw, record) with a link peeled off
the last one (:data:`PATTERNS`); the kernels of :mod:`pymc_edp.base.glm` then compute the
log-densities and ranges. :class:`FastLogLik` returns None for what they do not handle, and
:class:`~pymc_edp.model.stream.ModelColumns` falls back to PyTensor where they differ.
"""

from __future__ import annotations

import threading

import numpy as np

from pymc_edp.base import glm
from pymc_edp.model.products import exact_products

__all__ = ["Compiled", "FastLogLik", "recognise"]

#: Elements (draws x records) of one block of parameters computed at a time.
_BLOCK = 2**18
#: Fewest draws in a block (many records: a block is then larger than _BLOCK).
_MIN_DRAWS = 8


class FastLogLik:
    """The log-likelihood of one GLM family from its compiled parameter graph.

    ``inputs`` are the batched draw inputs (``n_draw_inputs`` of them), then the per-record
    inputs, observed values first; ``outputs`` the family's parameters, each ``(S, k)``,
    ``(S, 1)``, ``(k,)`` or ``(1,)``; ``family``, ``link`` and ``style`` as
    :func:`pymc_edp.base.glm.logp`.
    """

    def __init__(self, family, link, style, inputs, outputs, check_bounds, n_draw_inputs):
        self.family = family
        self.link = link
        self.style = int(style)
        self._inputs = list(inputs)
        self._outputs = list(outputs)
        self.check_bounds = bool(check_bounds)
        self.n_draw_inputs = int(n_draw_inputs)
        self._fn = Compiled()

    def __repr__(self) -> str:
        return f"<FastLogLik {self.family} ({self.link} link)>"

    def _function(self):
        return self._fn.get(lambda: _compile(self._inputs, self._outputs, self.check_bounds))

    def _blocks(self, n_draws: int, k: int) -> list[slice]:
        """Blocks of draws (all ``k`` records each) of about :data:`_BLOCK` elements."""
        size = max(_MIN_DRAWS, _BLOCK // max(1, k))
        return [slice(lo, min(n_draws, lo + size)) for lo in range(0, n_draws, size)]

    def _params(self, theta, chunk, k: int):
        """The parameters at the draws ``theta``, each 2-d and broadcastable to (S, k)."""
        n_draws = int(theta[0].shape[0])
        params = []
        for p in self._function()(*theta, *chunk):
            p = np.asarray(p)
            if p.ndim < 2:
                p = p.reshape(1, -1)
            if p.ndim != 2 or p.shape[0] not in (1, n_draws) or p.shape[1] not in (1, k):
                return None
            params.append(p)
        return params

    def compute(self, theta, chunk, extremes: set | None = None) -> np.ndarray | None:
        """``(S, k)`` float64 log-likelihood of per-record ``chunk`` at draws ``theta``, or None.

        ``extremes`` receives the draws of the extremes of the log-density and last parameter.
        """
        n_draws = int(theta[0].shape[0])
        k = int(chunk[0].shape[0])
        out = np.empty((n_draws, k))
        y = chunk[0]
        cache: dict = {}
        for block in self._blocks(n_draws, k):
            params = self._params([t[block] for t in theta], chunk, k)
            if params is None:
                return None
            rows = out[block]  # C-contiguous rows: the kernels write in place
            kw = {"style": self.style, "cache": cache, "out": rows}
            lp = glm.logp(self.family, self.link, y, params, **kw)
            if lp is None or lp.shape != rows.shape:
                return None
            if lp is not rows:  # pragma: no cover - the kernels wrote elsewhere
                rows[...] = lp
            if extremes is not None:  # (a parameter fixed over draws has none)
                for a in (rows, params[-1]):
                    extremes.update(block.start + s for s in glm.extreme_rows(a))
        return out

    def range(self, theta, chunk, alt_y=None, extremes: set | None = None) -> np.ndarray | None:
        """``(k,)`` range over draws of each record's log-likelihood (or log ratio at ``alt_y``).

        That of :meth:`compute`'s columns up to rounding; None if unhandled. ``extremes``
        receives the draws of the extreme values (of ``q`` where reduced, else the log-density).
        """
        n_draws = int(theta[0].shape[0])
        k = int(chunk[0].shape[0])
        state = glm.RangeState(self.family, self.link, chunk[0], alt_y, style=self.style, cache={})
        buf = None
        for block in self._blocks(n_draws, k):
            params = self._params([t[block] for t in theta], chunk, k)
            if params is None:
                return None
            rows = block.stop - block.start
            if buf is None or buf.shape[0] != rows:
                buf = np.empty((rows, k))
            if not state.update(params, out=buf):
                return None
        out = state.result()
        if out is not None and extremes is not None and n_draws > 1:
            for j, largest in (
                (int(np.argmin(state.mn)), False),
                (int(np.argmax(state.mx)), True),
            ):
                column = self._column(theta, [a[j : j + 1] for a in chunk], alt_y, j, state)
                if column is not None:
                    extremes.add(int(np.argmax(column) if largest else np.argmin(column)))
        return out

    def _column(self, theta, record, alt_y, j: int, state) -> np.ndarray | None:
        """``(S,)`` values of one record that :meth:`range` reduced (``q``, or log-density)."""
        if state.scalar:
            params = self._params(theta, record, 1)
            return None if params is None else np.asarray(params[-1])[:, 0]
        col = self.compute(theta, record)
        if col is None or alt_y is None:
            return None if col is None else col[:, 0]
        alt = self.compute(theta, [alt_y[j : j + 1], *record[1:]])
        return None if alt is None else (alt - col)[:, 0]


# -------------------------------------------------------------------------- recognition
def _family(op) -> glm.Family | None:
    """The :data:`~pymc_edp.base.glm.FAMILIES` entry whose random variable op is ``op``."""
    from pytensor.tensor.random import basic as rb

    for family in glm.FAMILIES.values():
        if type(op) is getattr(rb, family.rv_op, None):
            return family
    return None


def _pymc_style() -> int:
    import pymc as pm

    try:
        return 6 if int(pm.__version__.split(".")[0]) >= 6 else 5
    except ValueError:  # pragma: no cover - odd version strings
        return 6


def _scalar_op(var):
    """The scalar op of an Elemwise node producing ``var``, else None."""
    from pytensor.tensor.elemwise import Elemwise

    node = var.owner
    if node is None or not isinstance(node.op, Elemwise):
        return None
    return node.op.scalar_op


def _constant(var) -> float | None:
    """The value of a scalar constant (possibly broadcast), else None."""
    from pytensor.tensor.basic import get_underlying_scalar_constant_value

    try:
        return float(get_underlying_scalar_constant_value(var))
    except Exception:
        return None


def _sigmoid(q):
    from pytensor.scalar import math as sm

    return q.owner.inputs[0] if isinstance(_scalar_op(q), sm.Sigmoid) else None


def _half_erfc(q):
    """``z`` of PyMC's ``invprobit``, ``0.5 * erfc(z)``."""
    from pytensor.scalar import basic as sb
    from pytensor.scalar import math as sm

    if not isinstance(_scalar_op(q), sb.Mul) or len(q.owner.inputs) != 2:
        return None
    ins = q.owner.inputs
    for half, other in ((ins[0], ins[1]), (ins[1], ins[0])):
        if _constant(half) == 0.5 and isinstance(_scalar_op(other), sm.Erfc):
            return other.owner.inputs[0]
    return None


def _exp(q):
    from pytensor.scalar import basic as sb

    return q.owner.inputs[0] if isinstance(_scalar_op(q), sb.Exp) else None


def _pymc5_negbin_mu(q):
    """The logit ``log(alpha) - eta`` of PyMC 5's ``mu=``: ``p = alpha / (exp(eta) + alpha)``."""
    import pytensor.tensor as pt
    from pytensor.scalar import basic as sb

    if not isinstance(_scalar_op(q), sb.TrueDiv):
        return None
    num, den = q.owner.inputs
    if isinstance(_scalar_op(den), sb.Add) and len(den.owner.inputs) == 2:
        first, second = den.owner.inputs
        for mu, alpha in ((first, second), (second, first)):
            if _base(alpha) is _base(num) and isinstance(_scalar_op(mu), sb.Exp):
                return pt.log(num) - mu.owner.inputs[0]
    return None


#: The graph patterns a family's ``peel`` names: ``(link, function of q)``, the function
#: giving the link's argument, or None where ``q`` is not of that form.
PATTERNS = {
    "sigmoid": ("logit", _sigmoid),
    "half_erfc": ("erfc", _half_erfc),
    "exp": ("log", _exp),
    "pymc5_negbin_mu": ("logit", _pymc5_negbin_mu),
}


def _peel(family: glm.Family, q, style: int):
    """``(link, q')``: the link peeled off the family's last parameter ``q``."""
    patterns = family.peel if style >= 6 or family.peel_pymc5 is None else family.peel_pymc5
    for name in patterns:
        link, match = PATTERNS[name]
        inner = match(q)
        if inner is not None:
            return link, inner
    return "identity", q


def _base(var):
    """``var`` without the broadcasting ``DimShuffle`` ops in front of it."""
    from pytensor.tensor.elemwise import DimShuffle

    while var.owner is not None and isinstance(var.owner.op, DimShuffle):
        var = var.owner.inputs[0]
    return var


def recognise(graph) -> FastLogLik | None:
    """The :class:`FastLogLik` of a streaming graph's observed variable, or None (never raises)."""
    try:
        return _recognise(graph)
    except Exception:
        return None


def _recognise(graph) -> FastLogLik | None:
    import pytensor.tensor as pt
    from pytensor.graph.replace import clone_replace, vectorize_graph

    if not getattr(graph, "vectorised", False) or not graph.values:
        return None
    node = graph.rv_new.owner
    family = _family(node.op)
    if family is None or graph.rv_new.ndim != 1:
        return None
    params = list(node.inputs[2:])  # [rng, size, *dist_params]
    if len(params) != len(family.params):
        return None
    style = _pymc_style()
    params = graph.umodel.replace_rvs_by_values(params)
    params = clone_replace(params, replace=graph.replaced, rebuild_strict=False)
    link, q = _peel(family, params[-1], style)
    params = [*params[:-1], q]
    if any(p.ndim > 1 for p in params):
        return None
    params = [pt.shape_padleft(p) if p.ndim == 0 else p for p in params]
    # float32 parameters (constants) stay float32: the kernels round as PyTensor does
    params = [p if p.dtype in ("float64", "float32") else pt.cast(p, "float64") for p in params]
    batched = vectorize_graph(params, dict(zip(graph.values, graph.draw_inputs, strict=True)))
    if any(b.ndim > 2 for b in batched):
        return None
    batched = [exact_products(b) for b in batched]  # the streamed graph's bits
    inputs = [*graph.draw_inputs, *graph.data_inputs]
    return FastLogLik(
        family.name, link, style, inputs, list(batched), graph.check_bounds, len(graph.draw_inputs)
    )


class Compiled:
    """Holder of a compiled function, shared by the copies of one column object.

    Pickles empty, keeping its identity within one pickle, so a worker's copies compile once.
    Each thread gets its own ``Function.copy`` (a function keeps intermediates in its storage).
    """

    __slots__ = ("_local", "_lock", "fn", "told")

    def __init__(self):
        self.fn = None  # compiled first, by the thread calling it
        self.told = False  # whether the kernels' disagreement has been logged
        self._local = threading.local()
        self._lock = threading.Lock()

    def get(self, compile_fn):
        """The calling thread's function, compiled by ``compile_fn()`` once for all threads."""
        fn = getattr(self._local, "fn", None)
        if fn is None:
            with self._lock:
                if self.fn is None:
                    fn = self.fn = compile_fn()
                else:
                    fn = self.fn.copy()
            self._local.fn = fn
        return fn

    def __reduce__(self):
        return (Compiled, ())


def _compile(inputs, outputs, check_bounds: bool):
    """``pm.compile`` as a model with ``check_bounds`` would, by the C VM where there is one."""
    import pymc as pm
    from pymc.pytensorf import compile as pm_compile

    with pm.Model(check_bounds=check_bounds):
        mode = _c_mode()
        if mode is not None:
            try:
                return pm_compile(inputs, outputs, on_unused_input="ignore", mode=mode)
            except Exception:  # pragma: no cover - depends on the compiler
                pass
        return pm_compile(inputs, outputs, on_unused_input="ignore")


def _c_mode() -> str | None:
    """``"CVM"`` under PyTensor >= 3 with a C compiler configured, else None (the default)."""
    import pytensor

    major = int(str(pytensor.__version__).split(".")[0])
    if major < 3 or not getattr(pytensor.config, "cxx", ""):
        return None
    return "CVM"
