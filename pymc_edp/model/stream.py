"""The pointwise log-likelihood computed from the model, a chunk of records at a time.

:class:`ModelColumns` holds what :func:`pymc.compute_log_likelihood`'s ``n x S`` array is
computed from (the compiled elementwise graph, the draws, the per-record data) and computes
any columns on demand. Every input whose leading length is the number of records is taken as
per-record; as that is a guess, the chunked computation is checked once against the full one.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence

import numpy as np
import xarray as xr

from pymc_edp.core.loglik import SAMPLE_DIMS, LogLikelihood
from pymc_edp.model import families as _families
from pymc_edp.model.compat import graph_ancestors, graph_toposort, without_initial_values
from pymc_edp.model.fit import Fit
from pymc_edp.model.products import exact_products
from pymc_edp.model.recover import lacking_message
from pymc_edp.model.structure import read_structure

__all__ = [
    "ModelColumns",
    "StreamingUnavailableError",
    "model_log_likelihood",
    "stream_supported",
]

#: Draws and chunks used by the one-off check that chunked and full computations agree.
_CHECK_DRAWS = 3
#: Tolerance of that check: chunks change only the BLAS blocking, i.e. the last bits.
_CHECK_RTOL, _CHECK_ATOL = 1e-9, 1e-9
#: Largest per-record data (bytes) one chunk of that check slices.
_CHECK_BYTES = 64 * 2**20
#: Tolerance of the check that the fast kernels' columns equal PyTensor's.
_FAST_RTOL, _FAST_ATOL = 1e-12, 1e-12
#: Fixed (seeded) draws each chunk of fast columns is checked at, besides its extremes.
_VERIFY_DRAWS = 2
#: Largest difference from PyMC's own graph on the same data taken for rounding (two formulas
#: of one log-density, e.g. ``pm.Truncated``'s normalisation).
_GRAPH_RTOL, _GRAPH_ATOL = 1e-6, 1e-6

_logger = logging.getLogger("pymc_edp")

_ADVICE = (
    "Compute the log_likelihood group instead (pm.compute_log_likelihood(idata, "
    "model=model)) and audit that."
)


class StreamingUnavailableError(ValueError):
    """The log-likelihood of observed variable ``name`` cannot be streamed, for ``reason``."""

    def __init__(self, name: str, reason: str):
        super().__init__(
            f"streaming the log-likelihood of {name!r} from the model is not available: "
            f"{reason}. {_ADVICE}"
        )
        self.name = name
        self.reason = reason


# ------------------------------------------------------------------------------ graph
def _root_value(var) -> np.ndarray | None:
    """The numeric value of a constant or shared variable, else None."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    if isinstance(var, Constant):
        return np.asarray(var.data)
    if isinstance(var, SharedVariable):
        return np.asarray(var.get_value(borrow=True))
    return None


class _Graph:
    """The symbolic streaming graph of one observed variable.

    ``draw_inputs`` have a leading draw axis (unless not ``vectorised``); ``data_inputs`` are
    the per-record inputs, observed values first, with full values ``data`` and names
    ``labels``; ``output`` is the ``(S, k)`` log-likelihood.
    """

    def __init__(self, model, name: str):
        from pymc.model.transform.conditioning import remove_value_transforms
        from pytensor.graph.replace import clone_replace

        umodel = remove_value_transforms(without_initial_values(model))
        if name not in umodel.named_vars or umodel[name] not in umodel.observed_RVs:
            raise KeyError(f"{name!r} is not an observed variable of the model")
        self.umodel = umodel
        self.name = name
        self.check_bounds = bool(model.check_bounds)
        rv = umodel[name]
        value = umodel.rvs_to_values[rv]
        structure = read_structure(umodel, rv)
        if structure.coupled:
            raise StreamingUnavailableError(
                name, f"its records are coupled ({structure.reason}): not one term per record"
            )
        self.rv, self.value = rv, value
        logp, y = _elementwise_logp(umodel, rv, value, name)
        self.n = int(y.shape[0])
        y_new, logp_new, self.rv_new = _resized_logp(umodel, rv, value, name)
        replace, inputs, data, labels = _per_record_inputs(logp_new, y_new, self.n)
        inputs = [y_new, *inputs]
        data = [np.asarray(y, dtype=value.dtype), *data]
        labels = [name, *labels]
        self.replaced = {value: y_new, **replace}
        if replace:
            # rebuild (not filter) the nodes downstream: no static length n may survive
            (logp_new,) = clone_replace([logp_new], replace=replace, rebuild_strict=False)
        logp_new, folded, folded_data = _folded(logp_new, inputs[1:], data[1:], self.n)
        inputs += folded
        data += folded_data
        labels += [f"{v.name} (computed once from the data)" for v in folded]
        free_rvs = _free_rvs(umodel, rv, logp, logp_new, inputs, name)
        values = [umodel.rvs_to_values[v] for v in free_rvs]
        self.free = [v.name for v in free_rvs]
        self.free_dtypes = [v.dtype for v in values]
        self.values = values
        self.data_inputs, self.data, self.labels = inputs, data, labels
        self.draw_inputs, self.output, self.vectorised = _vectorised(values, logp_new)


def _elementwise_logp(umodel, rv, value, name: str):
    """``(logp, y)``: the elementwise log-likelihood, one term per record, and observed values."""
    (logp,) = umodel.logp(vars=[rv], sum=False)
    if logp.ndim != 1 or value.ndim < 1:
        raise StreamingUnavailableError(
            name,
            f"its elementwise log-likelihood has {logp.ndim} dimension(s) for observed "
            f"values of {value.ndim} dimension(s); streaming needs one term per record "
            "along the first axis (a univariate likelihood of a 1-d observed vector, or a "
            "multivariate one with one row per record)",
        )
    y = _root_value(value)
    if y is None:
        y = np.asarray(value.eval())
    return logp, y


def _resized_logp(umodel, rv, value, name: str):
    """``(y_new, logp_new, rv_new)``: the log-likelihood resized to chunks ``y_new``."""
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.distributions.shape_utils import change_dist_size

    y_new = pt.tensor(name=f"{name}_chunk", dtype=value.dtype, shape=(None, *value.type.shape[1:]))
    try:
        rv_new = _constants_folded(change_dist_size(rv, new_size=(y_new.shape[0],), expand=False))
        logp_new = pm.logp(rv_new, y_new, warn_rvs=False)
        (logp_new,) = umodel.replace_rvs_by_values([logp_new])
    except Exception as err:
        raise StreamingUnavailableError(
            name,
            f"its likelihood ({type(rv.owner.op).__name__}) cannot be resized to a chunk "
            f"of records ({type(err).__name__}: {err})",
        ) from err
    if logp_new.ndim != 1:  # pragma: no cover - resizing kept the layout above
        raise StreamingUnavailableError(name, "its resized log-likelihood is not 1-d")
    return y_new, logp_new, rv_new


def _constants_folded(rv):
    """``rv`` with its constant-expression parameters folded, as some ``logp`` read them."""
    import pytensor.tensor as pt
    from pytensor.graph.basic import Constant

    node = rv.owner
    inputs = list(node.inputs)
    changed = False
    for i, var in enumerate(inputs):
        if var.owner is None or not hasattr(var, "ndim"):
            continue
        roots = [v for v in graph_ancestors([var]) if v.owner is None]
        if not roots or not all(isinstance(v, Constant) for v in roots):
            continue
        try:
            inputs[i] = pt.constant(np.asarray(var.eval()), dtype=var.dtype)
        except Exception:  # pragma: no cover - left as it is
            continue
        changed = True
    if not changed:
        return rv
    return node.clone_with_new_inputs(inputs, strict=False).outputs[node.outputs.index(rv)]


def _chunk_input(var, name: str):
    """A symbolic input like ``var`` whose leading (record) axis has any length."""
    import pytensor.tensor as pt

    return pt.tensor(name=name, dtype=var.type.dtype, shape=(None, *var.type.shape[1:]))


def _per_record_inputs(logp_new, y_new, n: int):
    """``(replace, inputs, data, labels)``: every constant or data of leading length ``n``."""
    replace, inputs, data, labels = {}, [], [], []
    for var in graph_ancestors([logp_new]):
        if var.owner is not None or var is y_new or getattr(var, "ndim", 0) < 1:
            continue
        values = _root_value(var)
        if values is None or values.ndim < 1 or values.shape[0] != n:
            continue
        label = var.name or f"an unnamed {values.dtype} constant of shape {values.shape}"
        new = _chunk_input(var, f"per_record_{len(inputs) + 1}")
        replace[var] = new
        inputs.append(new)
        data.append(values)
        labels.append(label)
    return replace, inputs, data, labels


def _low_precision(var) -> bool:
    return str(getattr(var, "dtype", "")) in ("float32", "float16")


def _folded(logp_new, inputs, data, n: int):
    """``(logp_new, new_inputs, new_data)``: parts computed from float32 data alone, computed once.

    PyTensor folds constant expressions with NumPy, whose float32 ``log`` rounds otherwise
    than the backend's (up to 6e-8): such parts are computed here as the folding would and fed
    as per-record inputs. Float64 parts agree to rounding and stay in the graph.
    """
    import pytensor
    from pytensor.compile.mode import Mode
    from pytensor.graph.basic import Constant
    from pytensor.graph.replace import clone_replace

    if not inputs:
        return logp_new, [], []
    per_record = set(inputs)
    data_only: dict = {}  # var -> whether it depends on a per-record input
    consumers_outside: set = set()
    for node in graph_toposort([logp_new]):
        flags = []
        for var in node.inputs:
            if var in data_only:
                flags.append(data_only[var])
            elif var.owner is None and (var in per_record or isinstance(var, Constant)):
                data_only[var] = var in per_record
                flags.append(data_only[var])
            else:
                flags.append(None)
        if all(f is not None for f in flags):
            for out in node.outputs:
                data_only[out] = any(flags)
        else:
            consumers_outside.update(v for v, f in zip(node.inputs, flags, strict=True) if f)
    if data_only.get(logp_new):
        consumers_outside.add(logp_new)
    frontier = [
        v
        for v in consumers_outside
        if v.owner is not None
        and data_only.get(v)
        and getattr(v, "ndim", 0) >= 1
        and any(_low_precision(a) for a in graph_ancestors([v]) if a in data_only)
    ]
    replace, new_inputs, new_data = {}, [], []
    given = dict(zip(inputs, data, strict=True))
    for var in sorted(frontier, key=lambda v: str(v)):
        needed = [a for a in graph_ancestors([var]) if a in per_record]
        try:
            fn = pytensor.function(
                needed, var, mode=Mode(linker="py", optimizer=None), on_unused_input="ignore"
            )
            value = np.asarray(fn(*(given[a] for a in needed)))
        except Exception:  # pragma: no cover - left in the graph
            continue
        if value.ndim < 1 or value.shape[0] != n or value.dtype != np.dtype(var.dtype):
            continue
        new = _chunk_input(var, f"per_record_folded_{len(new_inputs) + 1}")
        replace[var] = new
        new_inputs.append(new)
        new_data.append(value)
    if replace:
        (logp_new,) = clone_replace([logp_new], replace=replace, rebuild_strict=False)
    return logp_new, new_inputs, new_data


def _free_rvs(umodel, rv, logp, logp_new, inputs, name: str) -> list:
    """The free variables ``logp_new`` depends on: those of ``logp``, and nothing unknown."""
    needed = set(graph_ancestors([logp_new]))
    free_rvs = [v for v in umodel.free_RVs if umodel.rvs_to_values[v] in needed]
    original = set(graph_ancestors([logp]))
    if free_rvs != [v for v in umodel.free_RVs if umodel.rvs_to_values[v] in original]:
        raise StreamingUnavailableError(
            name,
            "resized to a chunk of records, its log-likelihood no longer depends on the "
            f"same free variables ({type(rv.owner.op).__name__} is not supported)",
        )
    known = {umodel.rvs_to_values[v] for v in free_rvs} | set(inputs)
    unknown = [v for v in needed if v.owner is None and v not in known and _root_value(v) is None]
    if unknown:
        raise StreamingUnavailableError(
            name,
            "resized to a chunk of records, its log-likelihood depends on "
            f"{sorted(str(v) for v in unknown)}, which are neither free variables nor "
            f"data ({type(rv.owner.op).__name__} is not supported)",
        )
    return free_rvs


def _vectorised(values, logp_new):
    """``(draw_inputs, output, vectorised)``: ``logp_new`` over a leading draw axis if possible."""
    import pytensor.tensor as pt
    from pytensor.graph.replace import vectorize_graph

    try:
        batched = [
            pt.tensor(name=f"{v.name}_draws", dtype=v.dtype, shape=(None, *v.type.shape))
            for v in values
        ]
        out = vectorize_graph(logp_new, dict(zip(values, batched, strict=True)))
        if values and out.ndim != 2:  # pragma: no cover - defensive
            raise ValueError("vectorised log-likelihood is not 2-d")
        # products summed in order: a record's terms never depend on its chunk
        return batched, exact_products(out), True
    except Exception:  # pragma: no cover - depends on the model's ops
        return values, logp_new, False


# ---------------------------------------------------------------------------- columns
class ModelColumns:
    """``(S, n)`` elementwise log-likelihood of one observed variable, computed on demand.

    Indexed as an ``(n_samples, n_records)`` array (samples chain-major), returning ndarrays;
    ``np.asarray(columns)`` computes everything. Built by :func:`model_log_likelihood`.
    Pickles without its compiled function (compiled again per thread on first use).

    Attributes
    ----------
    name : str
        The observed variable.
    shape : tuple of int
        ``(n_samples, n_records)``.
    dtype : numpy.dtype
        Of the returned columns (computed in float64).
    inputs : tuple of str
        The per-record inputs, the observed values first.
    free : list of str
        The free variables whose draws the columns are computed from.
    check_bounds : bool
        The model's ``check_bounds``.

    Notes
    -----
    A recognised GLM likelihood (:mod:`pymc_edp.model.families`) is computed by fused kernels,
    each chunk checked against PyTensor at a few draws; ``fast=False`` uses PyTensor only.
    """

    ndim = 2

    def __init__(
        self,
        graph: _Graph,
        draws: Sequence[np.ndarray],
        n_samples: int,
        *,
        dtype: np.dtype | type = np.float64,
        fast: bool = True,
    ):
        self.name = graph.name
        self.free = list(graph.free)
        self.check_bounds = graph.check_bounds
        self._draw_inputs = list(graph.draw_inputs)
        self._data_inputs = list(graph.data_inputs)
        self._output = graph.output
        self._vectorised = graph.vectorised
        self._data = list(graph.data)
        self._draws = [np.asarray(d) for d in draws]
        self.inputs = tuple(graph.labels)
        self.dtype = np.dtype(dtype)
        if self.dtype.kind != "f":
            raise TypeError(f"dtype must be a floating-point type, got {self.dtype}")
        if any(d.shape[0] != n_samples for d in self._draws):
            raise ValueError(f"the draws of {self.free} are not all {n_samples} samples long")
        self.shape = (int(n_samples), int(graph.n))
        self._fn = _families.Compiled()
        self._fast = _families.recognise(graph) if fast else None

    # -- array protocol ------------------------------------------------------------------
    def __len__(self) -> int:
        return self.shape[0]

    def __repr__(self) -> str:
        return (
            f"<ModelColumns {self.name!r}: {self.shape[0]} draws x {self.shape[1]} records, "
            f"{self.dtype}, per-record inputs {list(self.inputs)}>"
        )

    def __array__(self, dtype=None, copy=None) -> np.ndarray:
        out = self[:, :]
        return out if dtype is None else out.astype(dtype, copy=False)

    def __getitem__(self, key) -> np.ndarray:
        """Columns ``key[1]`` at draws ``key[0]``, as NumPy indexes an ``(S, n)`` array."""
        if not isinstance(key, tuple):
            key = (key,)
        if len(key) == 1:
            key = (key[0], slice(None))
        if len(key) != 2:
            raise IndexError(f"too many indices for a 2-d array: {len(key)}")
        draw_key, col_key = key
        cols, drop_col = _normalise(col_key, self.shape[1], "record")
        draws, drop_draw = _normalise(draw_key, self.shape[0], "draw")
        out = self._compute(draws, cols)
        if drop_col:
            out = out[:, 0]
        if drop_draw:
            out = out[0]
        return out

    def with_observed(self, values) -> ModelColumns:
        """The log-likelihood at observed ``values`` (shaped like the data, or a scalar)."""
        y = self._data[0]
        new = np.asarray(values, dtype=y.dtype)
        if new.ndim == 0:
            new = np.broadcast_to(new, y.shape)
        if new.shape != y.shape:
            raise ValueError(
                f"replacement values for {self.name!r} have shape {new.shape}, expected the "
                f"observed data's {y.shape}"
            )
        return self._copy(_data=[new, *self._data[1:]])

    def at_draws(self, draws: Sequence[np.ndarray]) -> ModelColumns:
        """The same log-likelihood at other draws of :attr:`free`, ``(S', ...)`` each."""
        draws = [np.asarray(d) for d in draws]
        if len(draws) != len(self._draws):
            raise ValueError(f"expected draws of {self.free}, got {len(draws)} array(s)")
        n_samples = draws[0].shape[0] if draws else self.shape[0]
        if any(d.shape[0] != n_samples for d in draws):
            raise ValueError(f"the draws of {self.free} are not all {n_samples} samples long")
        return self._copy(_draws=draws, shape=(int(n_samples), self.shape[1]))

    def _copy(self, **changes) -> ModelColumns:
        """A copy sharing the compiled function, with ``changes`` to its attributes."""
        out = object.__new__(type(self))
        out.__dict__.update(self.__dict__, **changes)
        return out

    def range_of(self, columns, other: ModelColumns | None = None) -> np.ndarray:
        """``(n_columns,)`` ``max_s - min_s`` of each column, or of ``other - self`` (replacement).

        The same bits as reducing the computed columns, or, by a family's kernels, equal up to
        rounding; infinite where a column is not finite.
        """
        cols, _ = _normalise(columns, self.shape[1], "record")
        draws = slice(0, self.shape[0])
        fast, disagreed = self._fast_range(cols, other)
        if fast is not None:
            return fast
        # in the columns' dtype, as the reweighting reads them (float32 stays float32);
        # PyTensor's alone where the kernels disagreed with it on these records
        block = self._compute(draws, cols, fast=not disagreed)
        if other is not None:
            alt = other._compute(draws, cols, fast=not disagreed)
            block = np.subtract(alt, block, dtype=np.float64)
        with np.errstate(invalid="ignore"):  # -inf - -inf: a record outside the support
            out = block.max(axis=0).astype(np.float64) - block.min(axis=0).astype(np.float64)
        # never pruned, so that its reweighting says what is wrong
        out[~np.isfinite(out)] = np.inf
        return out

    def _fast_range(self, cols, other: ModelColumns | None) -> tuple[np.ndarray | None, bool]:
        """``(range, disagreed)``: :meth:`range_of` by the kernels (None: not, or disagreed)."""
        fast = self.__dict__.get("_fast")
        if fast is None or self.dtype != np.float64 or not self._draws or not self.shape[0]:
            return None, False
        if _length(cols, self.shape[1]) == 0:
            return np.empty(0), False
        alt_y = None
        if other is not None:
            same = (
                other.__dict__.get("_fast") is fast
                and other.dtype == np.float64
                and other.shape == self.shape
                and len(other._draws) == len(self._draws)
                and all(a is b for a, b in zip(other._draws, self._draws, strict=True))
                and all(a is b for a, b in zip(other._data[1:], self._data[1:], strict=True))
            )
            if not same:
                return None, False
            alt_y = other._data[0][cols]
        chunk = [a[cols] for a in self._data]
        extremes: set = set()
        out = fast.range(list(self._draws), chunk, alt_y, extremes)
        if out is None:
            return None, False
        # the kernels' values at the checked draws, against PyTensor's (both observed values)
        picks = self._verify_picks(extremes, self.shape[0])
        theta = [d[picks] for d in self._draws]
        alt = None if alt_y is None else [alt_y, *chunk[1:]]
        for data in (chunk, alt):
            if data is None:
                continue
            got = fast.compute(theta, data)
            if got is None or not self._fast_agrees(theta, data, got):
                return None, True
        return out, False

    # -- computation ---------------------------------------------------------------------
    def _function(self):
        return self._fn.get(
            lambda: _compile(
                [*self._draw_inputs, *self._data_inputs], self._output, self.check_bounds
            )
        )

    def _compute(self, draws, cols, dtype=None, fast: bool = True) -> np.ndarray:
        """``(len(draws), len(cols))`` in ``dtype``, by the kernels where ``fast`` and checked."""
        dtype = self.dtype if dtype is None else np.dtype(dtype)
        n_draws = _length(draws, self.shape[0])
        n_cols = _length(cols, self.shape[1])
        if n_draws == 0 or n_cols == 0:
            return np.empty((n_draws, n_cols), dtype=dtype)
        chunk = [a[cols] for a in self._data]
        theta = [d[draws] for d in self._draws]
        fast_ll = self.__dict__.get("_fast") if fast else None
        if fast_ll is not None and theta and self._vectorised:
            extremes: set = set()
            out = fast_ll.compute(theta, chunk, extremes)
            if out is not None:
                picks = self._verify_picks(extremes, n_draws)
                sub = [t[picks] for t in theta]
                if self._fast_agrees(sub, chunk, out[picks]):
                    return out.astype(dtype, copy=False)
        out = self._pytensor(theta, chunk, n_draws, n_cols)
        return out.astype(dtype, copy=False)

    def _pytensor(self, theta, chunk, n_draws: int, n_cols: int) -> np.ndarray:
        """``(n_draws, n_cols)`` float64 columns by PyTensor's graph."""
        fn = self._function()
        if not theta:  # a likelihood without parameters: the same at every draw
            out = np.broadcast_to(np.asarray(fn(*chunk)), (n_draws, n_cols))
        elif self._vectorised:
            out = np.asarray(fn(*theta, *chunk))
        else:  # pragma: no cover - models whose graph cannot be vectorised
            out = np.empty((n_draws, n_cols))
            for s in range(n_draws):
                out[s] = fn(*(t[s] for t in theta), *chunk)
        if out.shape != (n_draws, n_cols):
            raise ValueError(
                f"the log-likelihood of {self.name!r} for {n_cols} records at {n_draws} draws "
                f"came out with shape {out.shape}"
            )
        return out

    @staticmethod
    def _verify_picks(extremes: set, n_draws: int) -> np.ndarray:
        """The checked draws of a chunk: its extremes and fixed draws seeded by ``n_draws``."""
        fixed = np.random.default_rng(n_draws).choice(
            n_draws, size=min(_VERIFY_DRAWS, n_draws), replace=False
        )
        return np.union1d(fixed, np.fromiter(extremes, dtype=np.int64, count=len(extremes)))

    def _fast_agrees(self, theta, chunk, got: np.ndarray) -> bool:
        """Whether the kernels' ``got`` equal PyTensor's to 1e-12; logs the first disagreement."""
        n_draws, n_cols = got.shape
        want = self._pytensor(theta, chunk, n_draws, n_cols)
        ok = np.isclose(got, want, rtol=_FAST_RTOL, atol=_FAST_ATOL)
        if ok.all():
            return True
        if not self._fn.told:
            self._fn.told = True
            s, j = np.argwhere(~ok)[0]
            _logger.info(
                "%s: the fast %r log-likelihood differs from PyTensor's on a chunk of records "
                "(e.g. %r vs %r); such chunks are computed by PyTensor",
                self.name,
                self._fast,
                float(got[s, j]),
                float(want[s, j]),
            )
        return False

    def _check(self, graph: _Graph) -> None:
        """Chunked == full at a few draws, or a clear error naming the per-record inputs."""
        n_samples, n = self.shape
        picks = np.unique(np.linspace(0, n_samples - 1, min(_CHECK_DRAWS, n_samples)).astype(int))
        umodel = graph.umodel
        from pytensor.graph.replace import clone_replace

        by_name = {v.name: umodel.rvs_to_values[v] for v in umodel.free_RVs}
        # PyMC's own graph (the one pm.compute_log_likelihood compiles), with the same data
        # fed as inputs rather than compiled in as constants (slow to compile when large)
        (logp,) = umodel.logp(vars=[graph.rv], sum=False)
        (logp,) = clone_replace([logp], replace=graph.replaced, rebuild_strict=False)
        inputs = [by_name[v] for v in self.free]
        try:
            ref_fn = _compile([*inputs, *self._data_inputs], logp, self.check_bounds)
            ref = [np.asarray(ref_fn(*(d[s] for d in self._draws), *self._data)) for s in picks]
        except Exception as err:
            raise StreamingUnavailableError(
                self.name,
                f"PyMC's own log-likelihood graph could not be evaluated with the data as "
                f"inputs ({type(err).__name__}: {err})",
            ) from err
        ref = np.stack([np.broadcast_to(r, (n,)) if r.ndim == 0 else r for r in ref])
        if ref.shape != (picks.size, n):  # pragma: no cover - guarded by the layout check
            raise StreamingUnavailableError(
                self.name, f"its log-likelihood has shape {ref.shape[1:]}, not ({n},)"
            )
        # every record, in shuffled chunks (plus a contiguous one) of bounded data size
        row_bytes = sum(a[:1].nbytes for a in self._data) or 1
        size = max(1, min(-(-n // 2), _CHECK_BYTES // row_bytes))
        perm = np.random.default_rng(0).permutation(n)
        chunks = [slice(0, min(size, max(1, n // 3)))]
        chunks += [perm[i : i + size] for i in range(0, n, size)]
        others = list(self.inputs[1:])
        detail = (
            f"the inputs taken as per-record because their leading length is the number of "
            f"records n = {n} are {others}; one of them is not one value per record (e.g. a "
            "vector over groups, or over another dimension, whose length happens to equal n, "
            "or data with the records along another axis)"
            if others
            else "its only per-record input is the observed values"
        )
        got = np.empty_like(ref)
        for cols in chunks:
            try:  # PyTensor's streamed graph (the fast path is checked below)
                got[:, cols] = self._compute(picks, cols, np.float64, fast=False)
            except Exception as err:
                raise StreamingUnavailableError(
                    self.name,
                    f"computing a chunk of records failed ({type(err).__name__}: {err}); "
                    + detail,
                ) from err
        close = np.isclose(got, ref, rtol=_CHECK_RTOL, atol=_CHECK_ATOL, equal_nan=True)
        if not close.all():
            self._check_graph(picks, got, ref, close, detail)
        if self.__dict__.get("_fast") is not None:
            self._check_fast(picks, ref, chunks)

    def _check_graph(self, picks, got, ref, close, detail: str) -> None:
        """Tell a layout error from rounding where the chunked ``got`` differ from PyMC's ``ref``.

        Chunks differing from one call on all records: a wrong per-record input (an error);
        else another formula of the log-density, accepted up to :data:`_GRAPH_RTOL`.
        """
        n = self.shape[1]
        whole = self._compute(picks, slice(0, n), np.float64, fast=False)
        same = np.isclose(got, whole, rtol=_CHECK_RTOL, atol=_CHECK_ATOL, equal_nan=True)
        if not same.all():
            s, j = np.argwhere(~same)[0]
            raise StreamingUnavailableError(
                self.name,
                f"computed a chunk of records at a time it differs from the full "
                f"computation (record {j}, draw {picks[s]}: {got[s, j]!r} vs "
                f"{whole[s, j]!r}); " + detail,
            )
        near = np.isclose(whole, ref, rtol=_GRAPH_RTOL, atol=_GRAPH_ATOL, equal_nan=True)
        s, j = np.argwhere(~(near if not near.all() else close))[0]
        where = f"record {j}, draw {picks[s]}: {whole[s, j]!r} vs PyMC's {ref[s, j]!r}"
        if not near.all():
            raise StreamingUnavailableError(
                self.name,
                "resized to a chunk of records, its log-likelihood graph gives other values "
                f"than PyMC's on the same data ({where}), more than rounding",
            )
        with np.errstate(invalid="ignore"):
            gap = float(np.nanmax(np.abs(whole - ref)))
        _logger.debug(
            "%s: the log-likelihood resized to a chunk of records is another formula than "
            "PyMC's graph of the whole data, differing by up to %.3g (rounding; e.g. %s); "
            "the streamed columns are those of the resized graph",
            self.name,
            gap,
            where,
        )

    def _check_fast(self, picks, ref, chunks) -> None:
        """Drop the fast path unless its columns equal PyTensor's (``ref``) to 1e-12."""
        theta = [d[picks] for d in self._draws]
        for cols in chunks:
            try:
                got = self._fast.compute(theta, [a[cols] for a in self._data])
            except Exception as err:
                ok, reason = False, f"{type(err).__name__}: {err}"
            else:
                if got is None:  # a chunk the kernels leave to PyTensor
                    continue
                ok = np.allclose(got, ref[:, cols], rtol=_FAST_RTOL, atol=_FAST_ATOL)
                reason = "its columns differ from PyTensor's"
            if not ok:
                _logger.info(
                    "%s: the fast %r log-likelihood is not used (%s); computing with PyTensor",
                    self.name,
                    self._fast,
                    reason,
                )
                self._fast = None
                return


def _compile(inputs, output, check_bounds: bool):
    """``pm.compile`` as a model with ``check_bounds`` would."""
    import pymc as pm
    from pymc.pytensorf import compile as pm_compile

    with pm.Model(check_bounds=check_bounds):
        return pm_compile(inputs, output, on_unused_input="ignore")


def _length(index, size: int) -> int:
    if isinstance(index, slice):
        return len(range(*index.indices(size)))
    return int(np.size(index))


def _normalise(key, size: int, what: str):
    """``(index, dropped)``: a step-1 slice or an int64 array, and whether the axis drops."""
    if isinstance(key, slice):
        start, stop, step = key.indices(size)
        if step == 1:
            return slice(start, max(start, stop)), False
        return np.arange(start, stop, step, dtype=np.int64), False
    if isinstance(key, (int, np.integer)):
        i = int(key)
        if not -size <= i < size:
            raise IndexError(f"{what} index {i} is out of bounds for size {size}")
        return np.array([i % size], dtype=np.int64), True
    arr = np.asarray(key)
    if arr.dtype == bool:
        if arr.shape != (size,):
            raise IndexError(f"boolean {what} index of shape {arr.shape}, expected ({size},)")
        return np.flatnonzero(arr), False
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise IndexError(
            f"{what} index must be a slice, an integer or a 1-d integer or boolean array"
        )
    arr = arr.astype(np.int64, copy=False)
    if arr.size and (arr.min() < -size or arr.max() >= size):
        raise IndexError(f"{what} index out of bounds for size {size}")
    return np.where(arr < 0, arr + size, arr), False


def _posterior(data) -> xr.Dataset:
    posterior = data if isinstance(data, xr.Dataset) else Fit.of(data).group("posterior")
    for dim in SAMPLE_DIMS:
        if dim not in posterior.dims:
            raise ValueError(f"the posterior lacks the sample dimension {dim!r}")
    return posterior


def _posterior_draws(
    posterior: xr.Dataset, names: Sequence[str], dtypes: Sequence[str]
) -> list[np.ndarray]:
    """``(S, ...)`` arrays of the free variables ``names``, samples flattened chain-major."""
    missing = [v for v in names if v not in posterior]
    if missing:
        raise ValueError(
            lacking_message(posterior, missing, "the log-likelihood cannot be evaluated")
        )
    return [
        np.ascontiguousarray(_sample_array(posterior[name]), dtype=dtype)
        for name, dtype in zip(names, dtypes, strict=True)
    ]


def _sample_array(da: xr.DataArray) -> np.ndarray:
    """``(S, *shape)`` chain-major values of a posterior variable."""
    extra = [d for d in da.dims if d not in SAMPLE_DIMS]
    arr = np.asarray(da.transpose(*SAMPLE_DIMS, *extra).values)
    return arr.reshape(-1, *arr.shape[2:])


# -------------------------------------------------------------------------- public API
def stream_supported(model, names: Sequence[str] | None = None) -> dict[str, str | None]:
    """Which observed variables' log-likelihood can be streamed, without compiling.

    An input of leading length n that is not per-record only :func:`model_log_likelihood` sees.

    Parameters
    ----------
    model : pymc.Model
    names : sequence of str, optional
        Observed variables; default all.

    Returns
    -------
    dict
        Per name, None when streaming is available, else the reason.
    """
    names = [rv.name for rv in model.observed_RVs] if names is None else list(names)
    out: dict[str, str | None] = {}
    for name in names:
        try:
            _Graph(model, name)
        except StreamingUnavailableError as err:
            out[name] = err.reason
        else:
            out[name] = None
    return out


def _layout(umodel, name: str, n: int) -> tuple[str, np.ndarray]:
    """The record dimension and coordinate, as :func:`pymc.compute_log_likelihood` names them."""
    from pymc.backends.arviz import coords_and_dims_for_inferencedata

    coords, dims = coords_and_dims_for_inferencedata(umodel)
    var_dims = dims.get(name)
    dim = var_dims[0] if var_dims else f"{name}_dim_0"
    values = coords.get(dim)
    if values is None or len(values) != n:
        values = np.arange(n)
    return dim, np.asarray(values)


def model_log_likelihood(
    model,
    idata,
    names: Sequence[str] | None = None,
    *,
    dtype: np.dtype | type = np.float64,
    check: bool = True,
    fast: bool = True,
) -> LogLikelihood:
    """The pointwise log-likelihood as :class:`ModelColumns`, never held as ``n x S``.

    Parameters
    ----------
    model : pymc.Model
    idata : Fit, xarray.Dataset, xarray.DataTree or arviz.InferenceData
        Holding the model's free variables in ``posterior`` (or that group).
    names : sequence of str, optional
        Observed variables; default all.
    dtype : numpy dtype, default float64
        Of the columns (computed in float64).
    check : bool, default True
        Check once, at a few draws, that the chunked computation equals PyMC's.
    fast : bool, default True
        Use the GLM kernels of :mod:`pymc_edp.model.families`; False: PyTensor only.

    Returns
    -------
    LogLikelihood
        ``arrays`` are :class:`ModelColumns`; ``datasets`` has the variables and
        coordinates of :func:`pymc.compute_log_likelihood`, holding broadcast zeros.

    Raises
    ------
    StreamingUnavailableError
        When a variable cannot be streamed (:func:`stream_supported`).
    """
    names = [rv.name for rv in model.observed_RVs] if names is None else list(names)
    if not names:
        raise ValueError("the model has no observed variables")
    posterior = _posterior(idata)
    n_chains, n_draws = posterior.sizes["chain"], posterior.sizes["draw"]
    sample_coords = {d: posterior[d].values for d in SAMPLE_DIMS}
    columns, data_vars = [], {}
    for name in names:
        graph = _Graph(model, name)
        draws = _posterior_draws(posterior, graph.free, graph.free_dtypes)
        cols = ModelColumns(graph, draws, n_chains * n_draws, dtype=dtype, fast=fast)
        if check:
            cols._check(graph)
        dim, coord = _layout(graph.umodel, name, graph.n)
        data_vars[name] = xr.DataArray(
            np.broadcast_to(np.zeros((), dtype=cols.dtype), (n_chains, n_draws, graph.n)),
            dims=(*SAMPLE_DIMS, dim),
            coords={**sample_coords, dim: coord},
        )
        columns.append(cols)
    offsets = np.concatenate([[0], np.cumsum([c.shape[1] for c in columns])]).astype(np.int64)
    return LogLikelihood(tuple(names), tuple(columns), offsets, xr.Dataset(data_vars))
