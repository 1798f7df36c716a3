"""What the library scripts share: the stack line, the audit with timings, and graph anatomy.

:func:`audit_report` runs ``pymc_edp.audit(idata, model, random_seed=1)`` and prints its
epsilon, worst record, verification and timing, or the error it raised (the scripts are rerun
as the audit changes, so a failure is a result, not a crash).

:func:`anatomy` describes, for every observed variable and every ``pm.Potential`` of a model,
what a record is in the model's graph: the shape of the value and of its elementwise
log-density, the operations between them, what the observed value is (a constant, ``pm.Data``
or a graph), and which values each log-density term depends on (from the Jacobian of the
terms with respect to the values, evaluated at the model's initial point).
"""

from __future__ import annotations

import collections
import io
import time
import traceback
import warnings
from pathlib import Path

import numpy as np

warnings.filterwarnings("ignore", message=r"\s*ArviZ is undergoing", category=FutureWarning)


def stack() -> str:
    """Versions of the packages the scripts depend on."""
    from importlib.metadata import PackageNotFoundError, version

    names = [
        "pymc",
        "pytensor",
        "arviz",
        "numpy",
        "nutpie",
        "pymc-extras",
        "pymc-marketing",
        "pymc-bart",
        "statsmodels",
        "pymc-edp",
    ]
    out = []
    for name in names:
        try:
            out.append(f"{name} {version(name)}")
        except PackageNotFoundError:
            pass
    return " | ".join(out)


def has_nutpie() -> bool:
    """Whether nutpie is importable."""
    try:
        import nutpie  # noqa: F401
    except ImportError:
        return False
    return True


def sampler_kwargs(draws: int, tune: int, chains: int, seed: int, nutpie: bool = True) -> dict:
    """``pm.sample`` keywords for a small fit (nutpie where available and wanted)."""
    kw = dict(draws=draws, tune=tune, chains=chains, random_seed=seed, progressbar=False)
    if nutpie and has_nutpie():
        kw["nuts_sampler"] = "nutpie"
    else:
        kw["cores"] = 1
    return kw


class Timer:
    """Context manager that records wall-clock seconds in ``.seconds``."""

    def __enter__(self):
        self.t0 = time.perf_counter()
        return self

    def __exit__(self, *exc):
        self.seconds = time.perf_counter() - self.t0
        return False


def audit_report(name: str, idata, model, **kwargs) -> dict:
    """Run the default audit on ``(model, idata)`` and print what it found or how it failed.

    Returns a dict with ``name``, ``seconds`` and either the result's headline figures or
    ``error``.
    """
    import pymc_edp as edp

    out = {"name": name}
    print(f"\n--- audit: {name}  (pymc_edp.audit(idata, model, random_seed=1))", flush=True)
    t0 = time.perf_counter()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            res = edp.audit(idata, model, random_seed=1, progressbar=False, **kwargs)
    except Exception as exc:  # a failure is a result here
        out["seconds"] = time.perf_counter() - t0
        out["error"] = f"{type(exc).__name__}: {exc}"
        print(f"FAILED after {out['seconds']:.1f} s: {out['error']}")
        print("".join(traceback.format_exception(exc)[-6:]))
        return out
    out["seconds"] = time.perf_counter() - t0
    pw = res.pointwise
    worst = res.worst_neighbour
    row = pw.sel(neighbour=worst)
    out.update(
        epsilon=float(res.epsilon),
        worst=str(worst),
        worst_parameter=str(row["worst_parameter"].values) if "worst_parameter" in pw else "",
        worst_method=str(row["method"].values) if "method" in pw else "",
        n_neighbours=int(res.n_neighbours),
        method=res.method,
        verification=res.verification,
        verification_note=res.verification_note,
        interval=res.mc_interval90,
        warnings=[str(w.message)[:300] for w in caught],
    )
    print(f"epsilon = {out['epsilon']:.4f} (B = {res.bins}, {res.neighbour}, {res.method})")
    print(
        f"worst record: {out['worst']} (parameter {out['worst_parameter']}, "
        f"method {out['worst_method']}), {out['n_neighbours']} neighbours"
    )
    print(f"90% MC interval: {out['interval']}")
    print(f"verification: {res.verification}: {res.verification_note}")
    if "method" in pw:
        print("methods:", dict(collections.Counter(map(str, pw["method"].values))))
    print(f"audit time: {out['seconds']:.1f} s")
    for w in out["warnings"]:
        print("  warning:", w)
    top = res.most_exposed(5)
    print(top.to_string())
    return out


# ---------------------------------------------------------------------- graph anatomy
def _op_label(node) -> str:
    """A short readable label of an Apply node's op (core op of Elemwise/Blockwise)."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.scan.op import Scan
    from pytensor.tensor.blockwise import Blockwise
    from pytensor.tensor.elemwise import Elemwise

    op = node.op
    if isinstance(op, Elemwise):
        return f"Elemwise{{{type(op.scalar_op).__name__}}}"
    if isinstance(op, Blockwise):
        return f"Blockwise{{{_core_label(op.core_op)}, {op.signature}}}"
    if isinstance(op, Scan):
        return f"Scan{{{getattr(op, 'name', None) or 'scan'}}}"
    if isinstance(op, OpFromGraph):
        return f"OpFromGraph{{{type(op).__name__}}}"
    return type(op).__name__


def _core_label(op) -> str:
    from pytensor.tensor.elemwise import Elemwise

    if isinstance(op, Elemwise):
        return f"Elemwise{{{type(op.scalar_op).__name__}}}"
    return type(op).__name__


def _inner_summary(node, depth: int = 0) -> list[str]:
    """For a Scan or OpFromGraph: what its inner graph computes (op counts), recursively."""
    from pytensor.compile.builders import OpFromGraph
    from pytensor.graph.traversal import io_toposort
    from pytensor.scan.op import Scan

    op = node.op
    pad = "    " * (depth + 2)
    lines = []
    if isinstance(op, Scan):
        info = op.info
        lines.append(
            f"{pad}scan info: n_seqs={info.n_seqs}, n_mit_sot={info.n_mit_sot}, "
            f"n_sit_sot={info.n_sit_sot}, n_nit_sot={info.n_nit_sot}, "
            f"n_non_seqs={info.n_non_seqs}, n_shared_outs={info.n_shared_outs}"
        )
        inner_in, inner_out = op.inner_inputs, op.inner_outputs
    elif isinstance(op, OpFromGraph):
        inner_in, inner_out = op.inner_inputs, op.inner_outputs
        lines.append(f"{pad}inner graph: {len(inner_in)} inputs, {len(inner_out)} outputs")
    else:
        return lines
    nodes = io_toposort(inner_in, inner_out)
    counts = collections.Counter(_op_label(n) for n in nodes)
    lines.append(
        f"{pad}inner ops ({len(nodes)}): "
        + ", ".join(f"{k} x{v}" for k, v in counts.most_common())
    )
    for n in nodes:
        if isinstance(n.op, Scan | OpFromGraph) and depth < 2:
            lines.append(f"{pad}nested {_op_label(n)}:")
            lines.extend(_inner_summary(n, depth + 1))
    return lines


def _value_kind(model, value) -> str:
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant

    if isinstance(value, SharedVariable):
        in_model = any(d is value for d in getattr(model, "data_vars", []))
        return f"shared variable {value.name!r}" + (" (pm.Data of the model)" if in_model else "")
    if isinstance(value, Constant):
        return "constant (TensorConstant)"
    if value.owner is None:
        return f"free symbolic input {value.name!r}"
    return f"graph (output of {_op_label(value.owner)})"


def _path_nodes(outputs, sources):
    """Apply nodes of ``outputs``'s graph that depend on any of ``sources``, in order."""
    from pytensor.graph.traversal import io_toposort

    marked = set(sources)
    path = []
    for node in io_toposort([], list(outputs)):
        if any(inp in marked for inp in node.inputs):
            path.append(node)
            marked.update(node.outputs)
    return path


def _data_inputs(graph_outputs, model):
    """Non-scalar constants and shared variables a graph reads (name, kind, shape)."""
    from pytensor.compile.sharedvalue import SharedVariable
    from pytensor.graph.basic import Constant
    from pytensor.graph.traversal import graph_inputs

    out = []
    seen = set()
    for v in graph_inputs(list(graph_outputs)):
        if id(v) in seen:
            continue
        seen.add(id(v))
        if isinstance(v, SharedVariable):
            if any(v is d for d in model.dim_lengths.values()):
                continue  # the length of a dim of the model's coords
            val = v.get_value(borrow=True)
            if not hasattr(val, "shape"):
                out.append((v, f"shared {v.name!r} ({type(val).__name__})", None))
                continue
            preview = np.ravel(val)[:3].round(3).tolist() if np.size(val) else []
            out.append((v, f"shared {v.name!r} dtype {val.dtype} (first {preview})", val.shape))
        elif isinstance(v, Constant) and getattr(v.type, "ndim", 0) > 0:
            data = np.asarray(v.data)
            if data.size > 1:
                preview = data.ravel()[:3].round(3).tolist()
                out.append(
                    (v, f"constant {v.name!r} dtype {data.dtype} (first {preview})", data.shape)
                )
    return out


def _dependency(terms, wrt, point_inputs, points, wrt_value, max_evals=20_000):
    """Which elements of ``wrt`` each element of ``terms`` depends on, at each of ``points``.

    The terms are compiled as a function of ``wrt`` (replaced by an input) and evaluated with
    each element of ``wrt`` moved in turn by a relative step of 1e-3; a term that changes
    depends on that element. A term that does not read an element is bit-for-bit unchanged,
    so the pattern is exact up to an accidental exact cancellation, or a dependence too weak
    to move a double (a Kalman filter forgets old records geometrically). ``points`` maps a
    label to parameter values: at a degenerate point (an AR coefficient at 0) a coupled
    likelihood can look factorised. Returns text lines.
    """
    import pytensor
    from pytensor.graph.replace import graph_replace

    wrt_value = np.asarray(wrt_value)
    n_wrt = wrt_value.size
    if n_wrt > max_evals:
        return [f"dependency: skipped ({n_wrt} values to move is too many)"]
    sym = pytensor.tensor.tensor("v", shape=wrt.type.shape, dtype="float64")
    repl = sym if str(wrt.dtype) == "float64" else pytensor.tensor.cast(sym, wrt.dtype)
    [t] = graph_replace([terms], {wrt: repl}, strict=False)
    f = pytensor.function([*point_inputs, sym], t, on_unused_input="ignore")
    lines = []
    for label, point_values in points.items():
        lines.extend(_pattern(f, point_values, wrt_value, label))
    return lines


def _pattern(f, point_values, wrt_value, label):
    base_v = wrt_value.astype("float64")
    base = np.asarray(f(*point_values, base_v)).ravel()
    n_terms, n_wrt = base.size, base_v.size
    nz = np.zeros((n_terms, n_wrt), dtype=bool)
    flat = base_v.ravel()
    for j in range(n_wrt):
        moved = flat.copy()
        moved[j] += 1e-3 * max(1.0, abs(flat[j]))
        out = np.asarray(f(*point_values, moved.reshape(base_v.shape))).ravel()
        nz[:, j] = ~((out == base) | (np.isnan(out) & np.isnan(base)))
    lead = base_v.shape[0] if base_v.ndim else 1
    per_record = nz.reshape(n_terms, lead, -1).any(axis=2)
    deps = per_record.sum(axis=1)
    lines = [
        f"dependency at the {label} (each of the {n_wrt} values moved in turn; {n_terms} "
        f"terms vs the {lead} records along the value's first axis):",
        f"    records read per term: min {deps.min()}, median {int(np.median(deps))}, "
        f"max {deps.max()}",
    ]
    if n_terms == lead:
        own = per_record[np.arange(lead), np.arange(lead)]
        diag_only = bool(np.all(deps == own))
        lower = bool(np.all(np.triu(per_record, 1) == 0))
        full_lower = bool(np.all(per_record[np.tril_indices(lead)]))
        lines.append(
            f"    each term reads its own record only: {diag_only}; "
            f"lower triangular (term t reads records <= t only): {lower}; "
            f"term t reads every record <= t: {full_lower}; "
            f"terms not reading their own record: {int((~own).sum())}"
        )
        if not diag_only:
            idx = sorted({0, 1, 2, lead // 2, lead - 1})
            lines.append(
                "    records read by term t: " + ", ".join(f"t={t}: {int(deps[t])}" for t in idx)
            )
    elif n_terms == 1:
        lines.append(f"    one term reading {int(deps[0])} of {lead} records")
    return lines


def _logp_reads_value(model, rv, value_vars, point_values) -> str:
    """Whether ``pm.logp(rv, other)`` changes when ``other`` moves (not just its shape)."""
    import pymc as pm
    import pytensor

    value = model.rvs_to_values[rv]
    try:
        sym = value.type()
        (lp,) = model.replace_rvs_by_values([pm.logp(rv, sym)])
        f = pytensor.function([*value_vars, sym], lp, on_unused_input="ignore")
        base = value.get_value() if hasattr(value, "get_value") else getattr(value, "data", None)
        if base is None:
            return "pm.logp(rv, other values): not checked (the value is a graph)"
        base = np.asarray(base)
        a = np.asarray(f(*point_values, base))
        b = np.asarray(f(*point_values, (base + 0.5).astype(base.dtype)))
        moved = not np.array_equal(a, b, equal_nan=True)
        return f"pm.logp(rv, other values) changes when the values move: {moved}" + (
            "" if moved else "  <- the log-density does not read its value argument"
        )
    except Exception as exc:
        return f"pm.logp(rv, other values): failed ({type(exc).__name__}: {str(exc)[:200]})"


def point_shape(var, inputs, values):
    """Shape of ``var`` evaluated at a point."""
    import pytensor

    f = pytensor.function(list(inputs), var.shape, on_unused_input="ignore")
    return tuple(int(s) for s in f(*values))


def anatomy(model, title: str, path: Path | None = None, *, dependency: bool = True) -> str:
    """Describe where each observed variable's and Potential's log-density comes from.

    Parameters
    ----------
    model : pymc.Model
    title : str
        First line of the dump.
    path : pathlib.Path, optional
        Where to write the dump (also returned).
    dependency : bool
        Also compute which values each term depends on (a Jacobian; costs a compile).
    """
    import pytensor

    buf = io.StringIO()

    def say(*a):
        print(*a, file=buf)

    ip = model.initial_point()
    value_vars = list(model.value_vars)
    point_values = [ip[v.name] for v in value_vars]
    rng = np.random.default_rng(0)
    jittered = [np.asarray(v + rng.normal(0.0, 0.5, np.shape(v))) for v in point_values]
    points = {"initial point": point_values, "jittered point": jittered}
    say(f"# {title}")
    say(f"stack: {stack()}")
    say(f"free RVs: {[v.name for v in model.free_RVs]}")
    say(f"observed RVs: {[v.name for v in model.observed_RVs]}")
    say(f"potentials: {[v.name for v in model.potentials]}")
    say(f"deterministics: {[v.name for v in model.deterministics]}")
    shown = {v.name: np.round(j, 3).tolist() for v, j in zip(value_vars, jittered, strict=True)}
    say(
        "jittered point (dependency checks): initial point + N(0, 0.5) on the transformed "
        f"scale: {shown}"
    )
    say(f"pm.Data: {[(d.name, np.shape(d.get_value())) for d in model.data_vars]}")
    say("")
    for rv in model.observed_RVs:
        value = model.rvs_to_values[rv]
        say(f"## observed {rv.name!r}")
        say(f"distribution op: {type(rv.owner.op).__name__} ({rv.owner.op})")
        props = {
            k: getattr(rv.owner.op, k)
            for k in ("ndim_supp", "ndims_params", "signature", "extended_signature")
            if hasattr(rv.owner.op, k)
        }
        say(f"op properties: {props}")
        vshape = point_shape(value, value_vars, point_values)
        say(f"observed value: {_value_kind(model, value)}, shape {vshape}, dtype {value.dtype}")
        (logp,) = model.logp(vars=[rv], sum=False)
        lshape = point_shape(logp, value_vars, point_values)
        say(f"elementwise logp: shape {lshape} (model.logp(vars=[rv], sum=False))")
        ev = pytensor.function(value_vars, logp, on_unused_input="ignore")(*point_values)
        say(f"logp at the initial point: sum {np.sum(ev):.4f}, first {np.ravel(ev)[:3]}")
        from pytensor.graph.basic import Constant
        from pytensor.graph.traversal import graph_inputs

        logp_inputs = list(graph_inputs([logp]))
        if not any(i is value for i in logp_inputs):
            say(
                "!! the observed value object is NOT in its logp graph (replacing it by identity "
                "changes nothing)"
            )
            twins = [
                i
                for i in logp_inputs
                if isinstance(i, Constant)
                and i is not value
                and i.type == value.type
                and i.equals(value)
            ]
            for twin in twins:
                owners = [
                    f"input {k} of {node.op}"
                    for var in model.free_RVs + model.observed_RVs
                    for node in [var.owner]
                    for k, inp in enumerate(node.inputs)
                    if inp is twin
                ]
                say(
                    f"   it reads an equal constant instead (merged by PyTensor): {twin.type}, "
                    f"which is {owners or 'not an input of any RV'}"
                )
            if twins:
                value = twins[0]
                say("   (below: path and dependency traced from that constant)")
        route = _path_nodes([logp], [value])
        counts = collections.Counter(_op_label(n) for n in route)
        say(f"ops on the path value -> logp ({len(route)} nodes):")
        for k, v in counts.most_common():
            say(f"    {k} x{v}")
        for n in route:
            from pytensor.compile.builders import OpFromGraph
            from pytensor.scan.op import Scan

            if isinstance(n.op, Scan | OpFromGraph):
                say(f"  inside {_op_label(n)}:")
                for line in _inner_summary(n):
                    say(line)
        # everything in the logp graph (not only the value's path), for context
        from pytensor.graph.traversal import io_toposort

        all_nodes = io_toposort([], [logp])
        big = collections.Counter(_op_label(n) for n in all_nodes)
        say(
            f"all ops of the logp graph ({len(all_nodes)} nodes): "
            + ", ".join(f"{k} x{v}" for k, v in big.most_common(25))
        )
        heavy = [n for n in all_nodes if _op_label(n).startswith(("Scan", "OpFromGraph"))]
        for n in heavy:
            if n in route:
                continue
            say(f"  off the value's path: {_op_label(n)}")
            for line in _inner_summary(n):
                say(line)
        say(_logp_reads_value(model, rv, value_vars, point_values))
        data = _data_inputs([logp], model)
        say("data the logp graph reads (non-scalar constants and shared variables):")
        for _, label, shape in data:
            say(f"    {label} shape {shape}")
        if dependency:
            try:
                wrt_value = (
                    value.get_value()
                    if hasattr(value, "get_value")
                    else pytensor.function(value_vars, value, on_unused_input="ignore")(
                        *point_values
                    )
                    if value.owner is not None
                    else value.data
                )
                for line in _dependency(logp, value, value_vars, points, wrt_value):
                    say(line)
            except Exception as exc:
                say(f"dependency: failed ({type(exc).__name__}: {str(exc)[:300]})")
        say("")
    for pot_rv in model.potentials:
        # a Potential's graph holds the random variables; the log-density holds their values
        (pot,) = model.replace_rvs_by_values([pot_rv])
        say(f"## potential {pot_rv.name!r}")
        pshape = point_shape(pot, value_vars, point_values)
        say(f"shape {pshape}, dtype {pot.dtype}")
        top = _op_label(pot.owner) if pot.owner is not None else "no op"
        say(f"top op: {top}")
        data = _data_inputs([pot], model)
        say("data it reads (non-scalar constants and shared variables):")
        for var, label, shape in data:
            route = _path_nodes([pot], [var])
            counts = collections.Counter(_op_label(n) for n in route)
            say(
                f"    {label} shape {shape}; path to the potential ({len(route)} nodes): "
                + ", ".join(f"{k} x{v}" for k, v in counts.most_common())
            )
            if dependency and shape:
                try:
                    val = var.get_value() if hasattr(var, "get_value") else var.data
                    for line in _dependency(pot, var, value_vars, points, val):
                        say("    " + line)
                except Exception as exc:
                    say(f"    dependency: failed ({type(exc).__name__}: {str(exc)[:300]})")
        fr = [v.name for v in value_vars if _path_nodes([pot], [v])]
        say(f"    free values it reads: {fr}")
        say("")
    text = buf.getvalue()
    if path is not None:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(text)
    return text
