"""Refit engines: nutpie, PyMC and a user's builder, each compiling the model once."""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import uuid
import zlib
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

import numpy as np
import xarray as xr

from pymc_edp.model.compat import get_group, has_group
from pymc_edp.model.pymc import assigned_steps, sampled_without_nuts

_log = logging.getLogger("pymc_edp")

__all__ = [
    "BuilderEngine",
    "Engine",
    "NutpieEngine",
    "PymcEngine",
    "RefitInterrupted",
    "discrete_free_vars",
    "failed_to_start",
    "make_engine",
    "resolve_engine",
    "stricter",
]

# per-process cache of compiled samplers, keyed by an engine's token (survives pickling)
_COMPILED: dict[str, object] = {}


class RefitInterrupted(KeyboardInterrupt):
    """The refits were interrupted (Ctrl-C): what finished is saved, nothing cut short is.

    A ``KeyboardInterrupt``; rerun with the same checkpoint to refit only what is missing.

    Examples
    --------
    >>> from pymc_edp.refit import RefitInterrupted
    >>> try:
    ...     raise RefitInterrupted("refits interrupted: 12 of 40 saved in ckpt")
    ... except KeyboardInterrupt as err:
    ...     print(type(err).__name__, "-", err)
    RefitInterrupted - refits interrupted: 12 of 40 saved in ckpt

    ``outcomes`` holds the refits that finished before it, by task index.
    """

    def __init__(self, *args, outcomes: dict | None = None):
        super().__init__(*args)
        self.outcomes = dict(outcomes or {})


@runtime_checkable
class Engine(Protocol):
    """What runs one refit: ``sample(data, seed) -> (posterior, n_divergences)``.

    ``data`` are the neighbour's data (``pm.Data`` values, or a builder's
    :class:`~pymc_edp.model.transform.NeighbourData`); engines must pickle.

    Examples
    --------
    >>> from pymc_edp.refit import Engine
    >>> class Exact:
    ...     def sample(self, data, seed):
    ...         mu = np.random.default_rng(seed).normal(data["mean"], 1.0, (1, 100))
    ...         return xr.Dataset({"mu": (("chain", "draw"), mu)}), 0
    >>> isinstance(Exact(), Engine)
    True
    """

    def sample(self, data, seed: int) -> tuple[xr.Dataset, int]:
        """Sample the neighbour posterior; its draws of the kept variables and divergences."""
        ...


@dataclass
class _EngineBase:
    #: Whether refits may run side by side in threads: only an engine that samples without
    #: holding the GIL (PyMC's own NUTS steps in Python, one chain after another).
    side_by_side = False
    draws: int = 1000
    tune: int = 1000
    chains: int = 2
    var_names: tuple = ()
    sampler_kwargs: dict = field(default_factory=dict)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)
    #: Full-data posterior draws of the free variables (one ``{name: value}`` per chain,
    #: constrained values) where a refit that fails to start starts again (:meth:`restarted`).
    starts: tuple = ()
    #: A :class:`~pymc_edp.refit.warm.WarmStart`: chains start at full-data posterior draws
    #: and tune for ``warm.tune`` steps instead of :attr:`tune`; None starts cold.
    warm: object = None
    #: ``pm.Data`` values every refit sets before its neighbour's own (the user's model's
    #: current ones, :func:`~pymc_edp.refit.warm.current_data`).
    base_data: dict = field(default_factory=dict)

    @property
    def tune_steps(self) -> int:
        """Tuning steps of each refit: the warm start's when there is one."""
        return int(self.warm.tune) if self.warm is not None else int(self.tune)

    def restarted(self):
        """A copy that starts its chains at :attr:`starts`, or None without them."""
        return None

    def sample(self, data: dict, seed: int) -> tuple[xr.Dataset, int]:
        """One refit with ``data``: the posterior of the kept variables and its divergences."""
        return self._finish(self.sample_idata(data, seed)[0])

    def _pm_sample(self, seed: int, **kwargs):
        """``pm.sample`` of one refit, in the model context it is called in."""
        import pymc as pm

        return pm.sample(
            draws=self.draws,
            chains=self.chains,
            cores=1,
            random_seed=seed,
            progressbar=False,
            compute_convergence_checks=False,
            **kwargs,
        )

    def _finish(self, idata) -> tuple[xr.Dataset, int]:
        post = get_group(idata, "posterior")
        keep = [v for v in self.var_names if v in post] or list(post.data_vars)
        post = post[keep].load()
        stats = get_group(idata, "sample_stats") if has_group(idata, "sample_stats") else {}
        div = int(stats["diverging"].sum()) if "diverging" in stats else 0
        return post, div


@dataclass
class NutpieEngine(_EngineBase):
    """nutpie: compile the neighbour model once per process, ``with_data`` per refit."""

    #: nutpie holds no GIL: compiled refits may run side by side in threads.
    side_by_side = True
    model: object = None
    #: Where every chain starts (constrained values by name), instead of the model's own
    #: initial point jittered; set by :meth:`restarted`.
    initial_point: dict | None = None

    def _compiled(self):
        if self.token not in _COMPILED:
            import nutpie

            start = {}
            if self.initial_point is not None:  # exactly there: no jitter off a valid point
                start = dict(initial_points=self.initial_point, jitter_rvs=set())
            _COMPILED[self.token] = nutpie.compile_pymc_model(self.model, **start)
        return _COMPILED[self.token]

    def compile(self) -> None:
        """Compile the neighbour model now (before refits run side by side in threads)."""
        self._compiled()

    @property
    def is_compiled(self) -> bool:
        """Whether this process has compiled the neighbour model already."""
        return self.token in _COMPILED

    def restarted(self):
        """A copy starting every chain at the first of :attr:`starts`, or None."""
        if not self.starts or self.initial_point is not None or self.warm is not None:
            return None  # a warm refit already starts at full-data draws
        # one compiled sampler per process serves every restarted refit from this point
        # (the token outlives the audit: the neighbour model is cached per model)
        point = dict(self.starts[0])
        digest = zlib.crc32(b"".join(np.asarray(v).tobytes() for v in point.values()))
        return dataclasses.replace(
            self, initial_point=point, starts=(), token=f"{self.token}-start-{digest:08x}"
        )

    def _kwargs(self, seed: int) -> dict:
        return dict(
            draws=self.draws,
            tune=self.tune_steps,
            chains=self.chains,
            seed=seed,
            progress_bar=False,
            **self.sampler_kwargs,
        )

    def _with_data(self, data: dict):
        """The compiled model with ``data``, its chains starting at the warm start's draws."""
        compiled = self._compiled()
        base = self.base_data
        names = _shared_names(compiled)
        if names is not None:  # data the compiled graph does not read are not in it
            base = {k: v for k, v in base.items() if k in names}
        compiled = compiled.with_data(**{**base, **data})
        if self.warm is None:
            return compiled
        flat = np.asarray(self.warm.flat, dtype=np.float64)
        n_dim = getattr(compiled, "n_dim", None)
        if not hasattr(compiled, "initial_point_func") or flat.ndim != 2 or flat.shape[1] != n_dim:
            _log.debug("nutpie refits start at the model's initial point: no warm start taken")
            return compiled
        return dataclasses.replace(compiled, initial_point_func=_Starts(flat))

    def sample_idata(self, data: dict, seed: int):
        """The full InferenceData of one run with ``data``, and the model sampled."""
        import nutpie

        compiled = self._with_data(data)
        return nutpie.sample(compiled, **self._kwargs(seed)), self.model

    def sample(self, data: dict, seed: int):
        """As :meth:`Engine.sample`, read from nutpie's raw trace."""
        import nutpie

        compiled = self._with_data(data)
        kwargs = self._kwargs(seed)
        try:
            # the raw arrow trace skips building a full InferenceData (~20 ms a refit)
            raw = nutpie.sample(compiled, return_raw_trace=True, **kwargs)
        except TypeError:  # pragma: no cover - a nutpie without return_raw_trace
            return self._finish(nutpie.sample(compiled, **kwargs))
        try:
            return self._from_arrow(raw, compiled)
        except RefitInterrupted:
            raise  # never sampled again: the user asked to stop
        except Exception:  # pragma: no cover - nutpie's raw format changed
            _log.debug("unexpected nutpie trace layout; sampling again through nutpie's API")
            return self._finish(nutpie.sample(compiled, **kwargs))

    def _from_arrow(self, raw, compiled) -> tuple[xr.Dataset, int]:
        """Posterior of the kept variables and the divergence count from nutpie's trace."""
        import pyarrow

        def as_array(column) -> np.ndarray:
            return np.asarray(pyarrow.array(column).to_numpy(zero_copy_only=False))

        draw_batches, stat_batches = raw.get_arrow_trace()
        coords = {k: np.asarray(v) for k, v in getattr(compiled, "coords", {}).items()}
        per_var: dict = {}
        dims_of: dict = {}
        divergent = 0
        if len(draw_batches) < self.chains:
            raise RefitInterrupted(
                f"nutpie's trace was cut short: {len(draw_batches)} of {self.chains} chains"
            )
        for draws, stats in zip(draw_batches, stat_batches, strict=True):
            n_tune = int(as_array(stats.column("tuning")).sum())
            if draws.num_rows - n_tune < self.draws:
                # nutpie answers Ctrl-C by returning the draws made so far
                raise RefitInterrupted(
                    f"nutpie's trace was cut short: a chain has {max(draws.num_rows - n_tune, 0)}"
                    f" of {self.draws} draws"
                )
            divergent += int(as_array(stats.column("diverging"))[n_tune:].sum())
            for name in self.var_names or draws.column_names:
                if name not in draws.column_names:
                    continue
                col = draws.column(name)
                meta = col.field.metadata or {}
                shape = [int(x) for x in meta.get(b"shape", b"").decode().split(",") if x]
                dims = [d for d in meta.get(b"dims", b"").decode().split(",") if d]
                col = pyarrow.array(col)
                if col.null_count:
                    raise ValueError(f"missing draws of {name} in nutpie's trace")
                if hasattr(col, "flatten"):
                    col = col.flatten()
                values = np.asarray(col.to_numpy(zero_copy_only=False))
                values = values.reshape(-1, *shape)[n_tune:]
                per_var.setdefault(name, []).append(values)
                dims_of[name] = dims or [f"{name}_dim_{i}" for i in range(len(shape))]
        if not per_var:
            raise ValueError("no variables in nutpie's trace")
        data_vars, used = {}, {}
        for name, chains in per_var.items():
            arr = np.stack(chains)
            data_vars[name] = (("chain", "draw", *dims_of[name]), arr)
            for d, size in zip(dims_of[name], arr.shape[2:], strict=True):
                if d in coords and len(coords[d]) == size:
                    used[d] = coords[d]
        n_chains, n_draws = next(iter(data_vars.values()))[1].shape[:2]
        coords = {"chain": np.arange(n_chains), "draw": np.arange(n_draws), **used}
        return xr.Dataset(data_vars, coords=coords), divergent


def _shared_names(compiled) -> set | None:
    """Names of the data a compiled nutpie model reads (``with_data`` refuses others), or None.

    By variable (``shared_var_keys``) from nutpie 0.16.11, by name (``shared_data``) before.
    """
    known = getattr(compiled, "shared_var_keys", None)
    if known is not None:
        return {getattr(var, "name", None) for var in known}
    shared = getattr(compiled, "shared_data", None)
    return set(shared) if isinstance(shared, dict) else None


@dataclass
class PymcEngine(_EngineBase):
    """PyMC's NUTS with one step method per process; refits only swap shared data."""

    model: object = None
    #: Where the chains start (one ``{name: value}`` per chain, ``pm.sample(initvals=)``);
    #: set by :meth:`restarted`.
    initvals: tuple | None = None

    _STEP_KWARGS = ("target_accept", "max_treedepth", "early_max_treedepth", "step_scale")

    def restarted(self):
        """A copy whose chains start at :attr:`starts` (chain ``c`` at draw ``c``), or None."""
        if not self.starts or self.initvals is not None or self.warm is not None:
            return None  # a warm refit already starts at full-data draws
        points = tuple(dict(self.starts[c % len(self.starts)]) for c in range(self.chains))
        return dataclasses.replace(self, initvals=points, starts=())

    def _step(self):
        step = _COMPILED.get(self.token)
        # a library's step method (pymc-bart's PGBART) keeps its state from run to run,
        # which PyMC cannot reset: each refit builds its own, as a first refit would
        if step is None or _keeps_state(step):
            import pymc as pm

            # NUTS settings go to the step method built once, not to every pm.sample call
            step_kw = {k: v for k, v in self.sampler_kwargs.items() if k in self._STEP_KWARGS}
            with self.model:
                if sampled_without_nuts(self.model):
                    step = _compound_step(self.model, step_kw)
                else:
                    step = pm.NUTS(**step_kw)
            _COMPILED[self.token] = step
        _rearm(step)
        if self.warm is not None:
            _warm_potentials(step, self.warm)
        return step

    def _warm_initvals(self, seed: int) -> list[dict]:
        """One full-data draw per chain, chosen by ``seed`` (distinct while there are enough)."""
        points = self.warm.points
        pick = np.random.default_rng(seed).permutation(len(points))
        return [dict(points[pick[c % len(points)]]) for c in range(self.chains)]

    def sample_idata(self, data: dict, seed: int):
        """The full InferenceData of one run with ``data``, and the model sampled."""
        import pymc as pm

        step = self._step()
        sample_kw = {k: v for k, v in self.sampler_kwargs.items() if k not in self._STEP_KWARGS}
        if self.initvals is not None:
            sample_kw["initvals"] = [dict(p) for p in self.initvals]
        elif self.warm is not None and self.warm.points:
            sample_kw["initvals"] = self._warm_initvals(seed)
        with self.model, _kept_histories(self.model):
            pm.set_data({**self.base_data, **data})
            idata = self._pm_sample(seed, tune=self.tune_steps, step=step, **sample_kw)
        return idata, self.model


@dataclass
class BuilderEngine(_EngineBase):
    """A user's ``build_model(data) -> pm.Model``, sampled afresh for every neighbour."""

    build_model: Callable | None = None
    nuts_sampler: str = "pymc"

    def sample_idata(self, data, seed: int):
        """The full InferenceData of one run with ``data``, and the model built for it."""
        import pymc as pm

        model = self.build_model(data)
        if not isinstance(model, pm.Model):
            raise TypeError(f"build_model must return a pymc.Model, got {type(model).__name__}")
        if self.nuts_sampler == "nutpie":
            resolve_engine("nutpie", model)  # a clear error for discrete latent variables
        with model, _kept_histories(model):
            kwargs = dict(tune=self.tune, nuts_sampler=self.nuts_sampler, **self.sampler_kwargs)
            idata = self._pm_sample(seed, **kwargs)
        return idata, model


#: ``target_accept`` of the reruns of a refit with divergent transitions, in turn.
STRICTER_TARGET_ACCEPT = (0.95, 0.99)


def stricter(engine, target_accept: float):
    """A copy of ``engine`` that samples with ``target_accept``, or None if it cannot.

    Divergences mean biased draws; smaller steps usually cure them. nutpie takes it per run;
    PyMC builds a new step method.

    Examples
    --------
    >>> from pymc_edp.refit.engines import NutpieEngine, stricter
    >>> stricter(NutpieEngine(draws=10), 0.95).sampler_kwargs
    {'target_accept': 0.95}
    """
    if not isinstance(engine, _EngineBase):
        return None
    kwargs = {**engine.sampler_kwargs, "target_accept": float(target_accept)}
    copy = dataclasses.replace(engine, sampler_kwargs=kwargs)
    if isinstance(engine, PymcEngine):  # its step method is compiled with target_accept
        copy.token = f"{engine.token}-target_accept={float(target_accept):g}"
    return copy


#: What a sampler's error says when no chain could start (nutpie, PyMC 5 and 6).
_START_FAILURES = (
    "initialization points failed",  # nutpie
    "initial evaluation of model",  # PyMC's init
    "starting point",
    "bad initial energy",  # PyMC's NUTS at a given step method
)


def failed_to_start(err: BaseException) -> bool:
    r"""Whether ``err`` says the sampler could not start (no finite initial point).

    Examples
    --------
    >>> from pymc_edp.refit.engines import failed_to_start
    >>> failed_to_start(RuntimeError("All initialization points failed\n\nCaused by: ..."))
    True
    """
    text = str(err).lower()
    return any(s in text for s in _START_FAILURES)


def discrete_free_vars(model) -> list[str]:
    """Names of the free variables of ``model`` with an integer or boolean dtype (not for NUTS).

    Examples
    --------
    >>> from pymc_edp.refit.engines import discrete_free_vars
    >>> with pm.Model() as model:
    ...     k = pm.Poisson("k", 3.0)
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    >>> discrete_free_vars(model)
    ['k']
    """
    if model is None:
        return []
    return [v.name for v in model.value_vars if np.dtype(v.dtype).kind in "biu"]


def _compound_step(model, step_kw: dict):
    """PyMC's own step assignment over every free variable, built once (refits swap data)."""
    import pymc as pm
    from pymc.step_methods import CompoundStep

    discrete = set(discrete_free_vars(model))
    try:
        from pymc.sampling.mcmc import assign_step_methods, instantiate_steppers

        _, selected = assign_step_methods(model)
        uses_nuts = any(getattr(cls, "name", None) == "nuts" for cls in selected)
        steps = instantiate_steppers(
            model, [], selected, step_kwargs={"nuts": step_kw} if step_kw and uses_nuts else None
        )
    except (ImportError, TypeError):  # pragma: no cover - a PyMC without this API
        continuous = [v for v in model.value_vars if v.name not in discrete]
        steps = [pm.NUTS(vars=continuous, **step_kw)] if continuous else []
        steps.append(pm.Metropolis(vars=[v for v in model.value_vars if v.name in discrete]))
    if isinstance(steps, list):
        return CompoundStep(steps) if len(steps) > 1 else steps[0]
    return steps


@dataclass(frozen=True)
class _Starts:
    """nutpie's initial point function: a warm-start draw chosen by the seed, no jitter."""

    flat: np.ndarray

    def __call__(self, seed) -> np.ndarray:
        rng = np.random.default_rng(zlib.crc32(repr(seed).encode()))
        return np.array(self.flat[rng.integers(len(self.flat))], dtype=np.float64)


def _library_steps(model) -> dict[str, str]:
    """``{free variable: step method}`` for the variables a library's step method samples."""
    if model is None:
        return {}
    return {
        name: cls.__name__
        for name, cls in assigned_steps(model).items()
        if not cls.__module__.startswith("pymc.")
    }


def _keeps_state(step) -> bool:
    """Whether ``step`` has a method from outside PyMC (pymc-bart's PGBART), which keeps state."""
    return any(
        not type(method).__module__.startswith("pymc.")
        for method in getattr(step, "methods", [step])
    )


@contextlib.contextmanager
def _kept_histories(model):
    """Undo what sampling ``model`` appends to its random variables' ops.

    pymc-bart keeps the trees of every run on the ``BART`` op (``op.all_trees``, what
    ``pm.sample_posterior_predictive`` predicts from), and a neighbour model shares the op
    with the user's model: a refit's trees would join the user's posterior.
    """
    kept = []
    for rv in model.free_RVs:
        history = getattr(rv.owner.op, "all_trees", None)
        if history is not None and hasattr(history, "__len__"):
            kept.append((history, len(history)))
    try:
        yield
    finally:
        for history, size in kept:
            if len(history) > size:
                del history[size:]


def _rearm(step) -> None:
    """Make a compound step's methods tune again: a refit must not depend on those before it."""
    for method in getattr(step, "methods", ()):
        if isinstance(getattr(method, "tune", None), bool | np.bool_):
            method.tune = True


def _warm_potentials(step, warm) -> None:
    """Start ``step``'s NUTS mass-matrix adaptation at the warm start's draws' mean and variance.

    Weight 10, as PyMC's ``adapt_diag``; steps whose variables it does not cover keep theirs.
    """
    from pymc.step_methods.hmc.base_hmc import BaseHMC
    from pymc.step_methods.hmc.integration import CpuLeapfrogIntegrator
    from pymc.step_methods.hmc.quadpotential import QuadPotentialDiagAdapt

    for method in getattr(step, "methods", [step]):
        if not isinstance(method, BaseHMC):
            continue
        names = [v.name for v in method.vars]
        if any(n not in warm.slices for n in names):
            continue
        index = np.concatenate(
            [np.arange(warm.slices[n].start, warm.slices[n].stop) for n in names]
        )
        potential = QuadPotentialDiagAdapt(
            index.size, warm.mean[index], warm.var[index], 10, rng=method.rng.spawn(1)[0]
        )
        try:
            # the integrator holds the potential too: the two must be the same, or the
            # momenta drawn and the kinetic energy disagree (and the draws are wrong)
            integrator = CpuLeapfrogIntegrator(potential, method._logp_dlogp_func)
        except (AttributeError, TypeError):  # pragma: no cover - a PyMC laid out otherwise
            _log.debug("PyMC's NUTS keeps its own mass-matrix adaptation: no warm potential")
            continue
        method.potential, method.integrator = potential, integrator


def resolve_engine(engine: str | None, model=None) -> str:
    """``"nutpie"`` or ``"pymc"``; None picks nutpie when installed.

    A model with discrete free variables makes None pick PyMC (logged) and ``"nutpie"`` a
    ``ValueError``, as is an unknown engine.
    """
    if engine not in (None, "nutpie", "pymc"):
        raise ValueError(f"engine must be 'nutpie', 'pymc' or None, got {engine!r}")
    discrete = discrete_free_vars(model) if engine != "pymc" else []
    other = {}
    if engine != "pymc" and model is not None:
        other = {k: v for k, v in sampled_without_nuts(model).items() if k not in discrete}
    if engine == "nutpie" and discrete:
        raise ValueError(
            f"nutpie cannot sample discrete latent variables ({', '.join(discrete)}): it runs "
            "NUTS alone. Use engine='pymc' (or engine=None), which pairs NUTS with a "
            "Metropolis-type step for the discrete variables."
        )
    if engine == "nutpie" and other:
        steps = ", ".join(f"{k} by {v}" for k, v in other.items())
        raise ValueError(
            f"nutpie cannot sample {', '.join(other)}: it runs NUTS alone, and PyMC samples "
            f"them with their own step method ({steps}). Use engine='pymc' (or engine=None)."
        )
    if engine is None:
        why = None
        if discrete:
            why = (
                f"the model has discrete latent variable(s) {discrete}, which NUTS cannot "
                "sample (PyMC adds a Metropolis-type step for them)"
            )
        elif other:
            why = f"PyMC samples {other} with their own step method, which nutpie does not have"
        if why is not None:
            _log.info("refitting with PyMC's sampler rather than nutpie: %s", why)
            return "pymc"
        try:
            import nutpie  # noqa: F401
        except ImportError:
            return "pymc"
        return "nutpie"
    return engine


def make_engine(
    engine: str | None,
    *,
    model=None,
    build_model=None,
    draws: int,
    tune: int,
    chains: int,
    var_names,
    sampler_kwargs: dict | None = None,
    starts: tuple = (),
    token: str | None = None,
    warm=None,
    base_data: dict | None = None,
):
    """The refit engine: :func:`resolve_engine`'s, or a :class:`BuilderEngine` for ``build_model``.

    ``starts``, ``warm`` and ``base_data`` as the engines' fields (neither of the first two
    with a builder, whose models may name variables otherwise); ``token`` names ``model``'s
    compiled sampler in the per-process cache (engines on one neighbour model share it). A
    builder's models are sampled by PyMC unless ``engine="nutpie"``. A model with a variable
    a library's step method samples (pymc-bart's PGBART) is refitted cold, whatever ``warm``.
    """
    common = dict(
        draws=draws,
        tune=tune,
        chains=chains,
        var_names=tuple(var_names),
        sampler_kwargs=dict(sampler_kwargs or {}),
    )
    if build_model is not None:
        sampler = "nutpie" if engine == "nutpie" else "pymc"
        return BuilderEngine(**common, build_model=build_model, nuts_sampler=sampler)
    cls = NutpieEngine if resolve_engine(engine, model) == "nutpie" else PymcEngine
    own = _library_steps(model) if warm is not None else {}
    if own:  # PGBART grows its trees afresh whatever the chain's start: full tuning
        _log.info("refits start cold: %s keep their own state, not the fit's draws", own)
        warm = None
    eng = cls(
        **common, model=model, starts=tuple(starts), warm=warm, base_data=dict(base_data or {})
    )
    if token is not None:
        # PyMC's step method is built with its NUTS settings, and a warm one is adapted
        # from the warm start: neither is shared with other settings
        if cls is PymcEngine:
            step_kw = sorted((k, repr(v)) for k, v in common["sampler_kwargs"].items())
            token = f"{token}-pymc-{step_kw}-{'warm' if warm is not None else 'cold'}"
        eng.token = token
    return eng
