"""Exact refits of neighbour posteriors: one compiled model, parallel, resumable.

For a factorised likelihood every neighbour posterior is the same model with a per-record
weight: :func:`neighbour_model` clones the user's model and adds, for each observed variable,
``pm.Data`` vectors ``edp_dw_<name>`` (weight change of each record: -1 removes it),
``edp_alt_<name>`` (replacement values) and ``edp_v_<name>`` (1 where the replacement is
active), and one ``pm.Potential``::

    sum(dw * logp(y)) + sum(v * logp(y'))

so the n refits differ only by data and compile once (nutpie's ``with_data``, or one PyMC
step method whose shared data are swapped). Models whose likelihood does not factorise go
through a user-supplied ``build_model(data) -> pm.Model`` instead.

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the refit estimator).
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import time
import uuid
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path

import numpy as np
import xarray as xr

from pymc_edp.model.compat import get_group, has_group, make_container
from pymc_edp.model.loglik import NonFactorisedError

__all__ = [
    "NeighbourData",
    "RefitOutcome",
    "Refits",
    "neighbour_model",
    "refit_seed",
    "run_refits",
]

_log = logging.getLogger("pymc_edp")

DW, ALT, SWITCH, POTENTIAL = "edp_dw_{}", "edp_alt_{}", "edp_v_{}", "edp_reweight"

# per-process cache of compiled samplers, keyed by an engine's token (survives pickling)
_COMPILED: dict[str, object] = {}


def refit_seed(random_seed, index: int) -> int:
    """Seed of refit ``index``: reproducible whatever the order or resumption of refits.

    Examples
    --------
    >>> from pymc_edp.refit import refit_seed
    >>> refit_seed(1, 0), refit_seed(1, 1)
    (1835504127, 1189033389)
    >>> refit_seed(None, 3) == refit_seed(0, 3)  # no seed behaves as seed 0
    True
    """
    base = 0 if random_seed is None else int(random_seed)
    return int(np.random.SeedSequence([base, int(index)]).generate_state(1)[0])


# ----------------------------------------------------------------------- the models
def _observed_rvs(model, names=None):
    obs = [rv for rv in model.observed_RVs]
    if names is not None:
        wanted = set(names)
        unknown = wanted - {rv.name for rv in obs}
        if unknown:
            raise KeyError(f"{sorted(unknown)} are not observed variables of the model")
        obs = [rv for rv in obs if rv.name in wanted]
    return obs


def neighbour_model(model, observed=None):
    """Clone ``model`` so that one compiled graph represents every neighbour dataset.

    Parameters
    ----------
    model : pymc.Model
    observed : list of str, optional
        Observed variables whose records can be removed or replaced; default all.

    Returns
    -------
    pymc.Model
        With zero-valued ``edp_dw_*``/``edp_v_*`` data it has the full-data posterior.

    Raises
    ------
    NonFactorisedError
        When an observed variable's log-likelihood has fewer terms than the records a
        weight vector would switch (an MvNormal over all records, a GP, an AR series).

    Examples
    --------
    Building the clone is fast (no sampling); each observed variable gets three data
    vectors, all zero-weighted, and one potential carries the reweighting:

    >>> import pymc as pm
    >>> from pymc_edp.refit import neighbour_model
    >>> with pm.Model() as model:
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     y = pm.Normal("y", mu, 1.0, observed=[0.1, -0.3, 0.8])
    >>> nb = neighbour_model(model)
    >>> sorted(d.name for d in nb.data_vars), [p.name for p in nb.potentials]
    (['edp_alt_y', 'edp_dw_y', 'edp_v_y'], ['edp_reweight'])
    >>> nb["edp_dw_y"].get_value()  # set to -1 for the record a refit removes
    array([0., 0., 0.])
    """
    import pymc as pm
    import pytensor.tensor as pt
    from pymc.model.fgraph import clone_model
    from pytensor.graph.replace import clone_replace

    clone = clone_model(model)
    point = clone.initial_point()
    terms = []
    with clone:
        for rv in _observed_rvs(clone, observed):
            value = clone.rvs_to_values[rv]
            data = np.asarray(value.data if hasattr(value, "data") else value.get_value())
            # the model's own elementwise logp, in value space (pm.logp(rv, value) would
            # leave cloned random variables behind for e.g. pm.Censored)
            (logp,) = clone.logp(vars=[rv], sum=False)
            if logp.type.ndim == 0:
                raise NonFactorisedError(
                    f"the log-likelihood of {rv.name!r} is a single term (its distribution "
                    "couples all records, e.g. an MvNormal, GP or AR over the data), so a "
                    "record cannot be switched off by a weight. Pass build_model=, a function "
                    "that builds the model from each neighbour's data."
                )
            shape = np.shape(
                clone.compile_fn(logp, inputs=clone.value_vars, on_unused_input="ignore")(point)
            )
            dw = pm.Data(DW.format(rv.name), np.zeros(shape))
            alt = pm.Data(ALT.format(rv.name), data.copy())
            v = pm.Data(SWITCH.format(rv.name), np.zeros(shape))
            # pm.Data may hold the data in another dtype (int32 vs the value's int64)
            alt_value = pt.specify_shape(alt.astype(value.dtype), value.type.shape)
            (alt_logp,) = clone_replace([logp], replace={value: alt_value})
            terms.append(pt.sum(dw * logp) + pt.sum(v * alt_logp))
        pm.Potential(POTENTIAL, pt.add(*terms) if len(terms) > 1 else terms[0])
    return clone


@dataclass(frozen=True)
class NeighbourData(Mapping):
    """The data of one neighbour, handed to a user's ``build_model``.

    Acts as a mapping from observed variable name to the neighbour's observed values
    (records removed along the first axis, or replaced).

    Attributes
    ----------
    label
        The neighbour's coordinate value.
    index : int
        Its position.
    observed : dict
        Observed values of the neighbour dataset.
    keep : dict
        Boolean mask over each variable's records (False where removed).

    Examples
    --------
    The data a ``build_model`` receives for the neighbour without record 2 of ``y``:

    >>> import numpy as np
    >>> from pymc_edp.refit import NeighbourData
    >>> data = NeighbourData(label=2, index=2, observed={"y": np.array([0.1, -0.3])},
    ...                      keep={"y": np.array([True, True, False])})
    >>> list(data), data["y"], len(data)
    (['y'], array([ 0.1, -0.3]), 1)
    """

    label: object
    index: int
    observed: dict
    keep: dict

    def __getitem__(self, key):
        return self.observed[key]

    def __iter__(self):
        return iter(self.observed)

    def __len__(self):
        return len(self.observed)


# ----------------------------------------------------------------------- engines
@dataclass
class _EngineBase:
    draws: int = 1000
    tune: int = 1000
    chains: int = 2
    var_names: tuple = ()
    sampler_kwargs: dict = field(default_factory=dict)
    token: str = field(default_factory=lambda: uuid.uuid4().hex)

    def _finish(self, idata) -> tuple[xr.Dataset, int]:
        post = get_group(idata, "posterior")
        keep = [v for v in self.var_names if v in post] or list(post.data_vars)
        post = post[keep].load()
        div = 0
        if has_group(idata, "sample_stats"):
            stats = get_group(idata, "sample_stats")
            if "diverging" in stats:
                div = int(stats["diverging"].sum())
        return post, div


@dataclass
class NutpieEngine(_EngineBase):
    """nutpie: compile the neighbour model once per process, ``with_data`` per refit."""

    model: object = None

    def _compiled(self):
        if self.token not in _COMPILED:
            import nutpie

            _COMPILED[self.token] = nutpie.compile_pymc_model(self.model)
        return _COMPILED[self.token]

    def _kwargs(self, seed: int) -> dict:
        return dict(
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            seed=seed,
            progress_bar=False,
            **self.sampler_kwargs,
        )

    def sample_idata(self, data: dict, seed: int):
        """The full InferenceData of one run with ``data``, and the model sampled."""
        import nutpie

        compiled = self._compiled().with_data(**data)
        return nutpie.sample(compiled, **self._kwargs(seed)), self.model

    def sample(self, data: dict, seed: int):
        import nutpie

        compiled = self._compiled().with_data(**data)
        kwargs = self._kwargs(seed)
        try:
            # the raw arrow trace skips building a full InferenceData (~20 ms a refit)
            raw = nutpie.sample(compiled, return_raw_trace=True, **kwargs)
        except TypeError:  # pragma: no cover - a nutpie without return_raw_trace
            return self._finish(nutpie.sample(compiled, **kwargs))
        try:
            return self._from_arrow(raw, compiled)
        except Exception:  # pragma: no cover - nutpie's raw format changed
            _log.debug("unexpected nutpie trace layout; sampling again through nutpie's API")
            return self._finish(nutpie.sample(compiled, **kwargs))

    def _from_arrow(self, raw, compiled) -> tuple[xr.Dataset, int]:
        """Posterior of the kept variables and the divergence count from nutpie's trace."""
        import pyarrow

        draw_batches, stat_batches = raw.get_arrow_trace()
        coords = {k: np.asarray(v) for k, v in getattr(compiled, "coords", {}).items()}
        per_var: dict = {}
        dims_of: dict = {}
        divergent = 0
        for draws, stats in zip(draw_batches, stat_batches, strict=True):
            tuning = pyarrow.array(stats.column("tuning")).to_numpy(zero_copy_only=False)
            n_tune = int(np.asarray(tuning).sum())
            div = pyarrow.array(stats.column("diverging")).to_numpy(zero_copy_only=False)
            div = np.asarray(div)[n_tune:]
            divergent += int(div.sum())
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
        ds = xr.Dataset(
            data_vars,
            coords={"chain": np.arange(n_chains), "draw": np.arange(n_draws), **used},
        )
        return ds, divergent


@dataclass
class PymcEngine(_EngineBase):
    """PyMC's NUTS with one step method per process; refits only swap shared data."""

    model: object = None

    _STEP_KWARGS = ("target_accept", "max_treedepth", "early_max_treedepth", "step_scale")

    def _step(self):
        if self.token not in _COMPILED:
            import pymc as pm

            # NUTS settings go to the step method built once, not to every pm.sample call
            step_kw = {k: v for k, v in self.sampler_kwargs.items() if k in self._STEP_KWARGS}
            with self.model:
                if discrete_free_vars(self.model):
                    _COMPILED[self.token] = _compound_step(self.model, step_kw)
                else:
                    _COMPILED[self.token] = pm.NUTS(**step_kw)
        return _COMPILED[self.token]

    def sample_idata(self, data: dict, seed: int):
        """The full InferenceData of one run with ``data``, and the model sampled."""
        import pymc as pm

        step = self._step()
        sample_kw = {k: v for k, v in self.sampler_kwargs.items() if k not in self._STEP_KWARGS}
        with self.model:
            pm.set_data(data)
            idata = pm.sample(
                draws=self.draws,
                tune=self.tune,
                chains=self.chains,
                cores=1,
                step=step,
                random_seed=seed,
                progressbar=False,
                compute_convergence_checks=False,
                **sample_kw,
            )
        return idata, self.model

    def sample(self, data: dict, seed: int):
        return self._finish(self.sample_idata(data, seed)[0])


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
        with model:
            idata = pm.sample(
                draws=self.draws,
                tune=self.tune,
                chains=self.chains,
                cores=1,
                random_seed=seed,
                nuts_sampler=self.nuts_sampler,
                progressbar=False,
                compute_convergence_checks=False,
                **self.sampler_kwargs,
            )
        return idata, model

    def sample(self, data, seed: int):
        return self._finish(self.sample_idata(data, seed)[0])


def discrete_free_vars(model) -> list[str]:
    """Names of the free (latent) variables of ``model`` with an integer or boolean dtype.

    NUTS, and so nutpie, cannot sample them; PyMC pairs NUTS with a Metropolis-type step.

    Examples
    --------
    >>> import pymc as pm
    >>> from pymc_edp.refit import discrete_free_vars
    >>> with pm.Model() as model:
    ...     k = pm.Poisson("k", 3.0)
    ...     mu = pm.Normal("mu", 0.0, 1.0)
    ...     y = pm.Normal("y", mu + k, 1.0, observed=[0.5, 4.0])
    >>> discrete_free_vars(model)
    ['k']
    """
    if model is None:
        return []
    return [v.name for v in model.value_vars if np.dtype(v.dtype).kind in "biu"]


def _compound_step(model, step_kw: dict):
    """One step over every free variable: PyMC's own assignment, built once.

    NUTS for the continuous variables and a Metropolis-type step for the discrete ones; the
    refits only swap shared data.
    """
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


def resolve_engine(engine: str | None, model=None) -> str:
    """``"nutpie"`` or ``"pymc"``; None picks nutpie when it is installed.

    Parameters
    ----------
    engine : {"nutpie", "pymc"} or None
    model : pymc.Model, optional
        The model the engine will sample. If it has discrete free variables (which NUTS
        cannot sample), None picks PyMC (logged at INFO level), and ``"nutpie"`` is refused.

    Raises
    ------
    ValueError
        For an unknown engine, or ``"nutpie"`` with a model that has discrete free variables.
    """
    if engine not in (None, "nutpie", "pymc"):
        raise ValueError(f"engine must be 'nutpie', 'pymc' or None, got {engine!r}")
    discrete = discrete_free_vars(model) if engine != "pymc" else []
    if engine == "nutpie" and discrete:
        raise ValueError(
            f"nutpie cannot sample discrete latent variables ({', '.join(discrete)}): it runs "
            "NUTS alone. Use engine='pymc' (or engine=None), which pairs NUTS with a "
            "Metropolis-type step for the discrete variables."
        )
    if engine is None:
        if discrete:
            _log.info(
                "refitting with PyMC's sampler rather than nutpie: the model has discrete "
                "latent variable(s) %s, which NUTS cannot sample (PyMC adds a Metropolis-type "
                "step for them)",
                discrete,
            )
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
):
    """Choose an engine: nutpie when installed, else PyMC; ``build_model`` overrides.

    With ``build_model`` the sampler is PyMC's unless ``engine="nutpie"`` (each neighbour
    model compiles anew, which PyMC's compile cache makes cheaper). A model with discrete
    free variables is refitted by PyMC (NUTS plus a Metropolis-type step) when ``engine`` is
    None; ``engine="nutpie"`` is refused for it (:func:`resolve_engine`).
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
    return cls(**common, model=model)


# ------------------------------------------------------------------ running refits
@dataclass(frozen=True)
class RefitOutcome:
    """What became of one refit.

    Examples
    --------
    >>> import numpy as np, xarray as xr
    >>> from pymc_edp.refit import RefitOutcome, refit_seed
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    >>> out = RefitOutcome(0, "a", "ok", "", refit_seed(1, 0), 0.5, post)
    >>> out.status, out.seed, dict(out.posterior.sizes)
    ('ok', 1835504127, {'chain': 1, 'draw': 4})
    """

    index: int
    label: object
    status: str  # "ok", "diverged", "error"
    reason: str
    seed: int
    seconds: float
    posterior: xr.Dataset | None


def _run_one(engine, task) -> RefitOutcome:
    index, label, data, seed = task
    start = time.perf_counter()
    try:
        if callable(data):  # expanded here, not held for every task at once
            data = data()
        post, div = engine.sample(data, seed)
    except Exception as err:  # recorded, never silently dropped
        return RefitOutcome(
            index,
            label,
            "error",
            f"{type(err).__name__}: {err}",
            seed,
            time.perf_counter() - start,
            None,
        )
    status, reason = ("diverged", f"{div} divergent transitions") if div else ("ok", "")
    return RefitOutcome(index, label, status, reason, seed, time.perf_counter() - start, post)


def config_hash(config: dict) -> str:
    """A short hash of an audit's refit configuration, stored in every checkpointed refit.

    The first 16 hex digits of the SHA-256 of the canonical JSON (sorted keys, no spaces).

    Examples
    --------
    >>> from pymc_edp.refit import config_hash
    >>> config_hash({"draws": 1000, "tune": 500}) == config_hash({"tune": 500, "draws": 1000})
    True
    >>> len(config_hash({"draws": 1000}))
    16
    """
    text = json.dumps(config, sort_keys=True, separators=(",", ":"), default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:16]


_STATUSES = ("ok", "diverged", "error")


def _brief(err: BaseException, limit: int = 200) -> str:
    """``Type: first line of the message``, shortened (xarray's run over several lines)."""
    lines = str(err).strip().splitlines()
    text = lines[0] if lines else ""
    if len(text) > limit:
        text = text[: limit - 3] + "..."
    return f"{type(err).__name__}: {text}" if text else type(err).__name__


class Checkpoint:
    """A folder where each finished refit is written as it completes (netCDF).

    ``manifest.json`` holds the configuration of the audit that wrote the folder, and each
    ``refit_<index>.nc`` the short :func:`config_hash` of it. The folder heals itself: a refit
    file that cannot be read is moved aside (``refit_000003.nc.damaged``) and that neighbour
    refitted; a damaged manifest is moved aside (``manifest.json.damaged``) and written
    afresh, the refit files then being checked by their stored hash. What was repaired is
    collected in :attr:`messages` (``refit_neighbours`` returns them, ``audit`` warns).

    Parameters
    ----------
    path : str or path-like
        The folder (created if needed).
    config : dict
        What the refits depend on (JSON-serialisable).

    Raises
    ------
    ValueError
        If the folder was written by an audit with a different configuration (its manifest,
        or with a damaged manifest a refit file's stored hash, differs).

    Examples
    --------
    A zero-byte refit file (a full disk, a killed copy) is set aside, not fatal:

    >>> import tempfile, pathlib
    >>> from pymc_edp.refit import Checkpoint
    >>> folder = pathlib.Path(tempfile.mkdtemp())
    >>> _ = Checkpoint(folder, {"draws": 10})
    >>> (folder / "refit_000001.nc").write_bytes(b"")
    0
    >>> ckpt = Checkpoint(folder, {"draws": 10})
    >>> ckpt.load(1) is None, (folder / "refit_000001.nc.damaged").exists()
    (True, True)
    >>> print(ckpt.messages[0][:60])
    checkpoint refit file refit_000001.nc is damaged and was mov
    """

    def __init__(self, path, config: dict):
        self.path = Path(path)
        self.path.mkdir(parents=True, exist_ok=True)
        self.config_hash = config_hash(config)
        #: what was repaired, one sentence each (returned by ``refit_neighbours``)
        self.messages: list[str] = []
        #: False when the manifest was damaged and rewritten: refit files without a stored
        #: configuration hash can then not be verified and are refitted
        self.manifest_intact = True
        manifest = self.path / "manifest.json"
        if not manifest.exists():
            manifest.write_text(json.dumps(config, indent=1, sort_keys=True))
            return
        try:
            old = json.loads(manifest.read_text())
            if not isinstance(old, dict):
                raise ValueError(f"expected a JSON object, found a {type(old).__name__}")
        except Exception as err:  # unreadable, truncated, garbled
            self._replace_manifest(manifest, config, _brief(err))
            return
        if old != config:
            diff = sorted(k for k in set(old) | set(config) if old.get(k) != config.get(k))
            raise ValueError(
                f"checkpoint {self.path} was written by a different audit (differs in "
                f"{diff}); use a new checkpoint path or the same settings"
            )

    def _replace_manifest(self, manifest: Path, config: dict, problem: str) -> None:
        # refuse a folder of another audit before touching anything in it
        for f in sorted(self.path.glob("refit_*.nc")):
            try:
                with xr.open_dataset(f) as ds:
                    stored = ds.attrs.get("config_hash")
            except Exception:  # damaged: set aside when loaded
                continue
            if stored is not None and str(stored) != self.config_hash:
                raise ValueError(
                    f"checkpoint {self.path} has a damaged manifest ({manifest.name}: "
                    f"{problem}) and its refit files were written by a different audit "
                    f"({f.name} has configuration hash {stored}, this audit "
                    f"{self.config_hash}); use a new checkpoint path or the same settings"
                )
        aside = manifest.with_name(manifest.name + ".damaged")
        os.replace(manifest, aside)
        manifest.write_text(json.dumps(config, indent=1, sort_keys=True))
        self.manifest_intact = False
        self.messages.append(
            f"checkpoint manifest {manifest} is damaged ({problem}); moved it to "
            f"{aside.name} and wrote a new one from this audit's settings. Saved refits are "
            "reused only where their stored configuration hash matches this audit"
        )

    def _file(self, index: int) -> Path:
        return self.path / f"refit_{index:06d}.nc"

    def _set_aside(self, f: Path, suffix: str) -> str:
        aside = f.with_name(f.name + suffix)
        try:
            os.replace(f, aside)  # replaces an older file set aside under the same name
        except OSError as err:
            f.unlink(missing_ok=True)
            return f"could not be moved aside ({err}) and was deleted"
        return f"was moved to {aside.name}"

    def load(self, index: int) -> RefitOutcome | None:
        """The saved outcome of refit ``index``, or None (also when its file was damaged).

        Raises
        ------
        ValueError
            If the file's stored configuration hash is not this audit's.
        """
        f = self._file(index)
        if not f.exists():
            return None
        try:
            with xr.open_dataset(f) as ds:
                ds = ds.load()
            out, stored = self._parse(ds, index)
        except Exception as err:  # truncated, zero bytes, missing or garbled attributes
            where = self._set_aside(f, ".damaged")
            self.messages.append(
                f"checkpoint refit file {f.name} is damaged and {where} ({_brief(err)}); "
                "refitting that neighbour"
            )
            return None
        if stored is None:
            if self.manifest_intact:
                return out  # written before refit files carried a hash
            where = self._set_aside(f, ".unverified")
            self.messages.append(
                f"checkpoint refit file {f.name} has no configuration hash and the manifest "
                f"was damaged, so it cannot be checked against this audit; it {where} and "
                "that neighbour is refitted"
            )
            return None
        if stored != self.config_hash:
            raise ValueError(
                f"checkpoint {self.path}: {f.name} was written by a different audit "
                f"(configuration hash {stored}, this audit {self.config_hash}); use a new "
                "checkpoint path or the same settings"
            )
        return out

    @staticmethod
    def _parse(ds: xr.Dataset, index: int) -> tuple[RefitOutcome, str | None]:
        a = dict(ds.attrs)
        missing = [
            k for k in ("index", "label", "status", "reason", "seed", "seconds") if k not in a
        ]
        if missing:
            raise ValueError(f"missing attribute(s) {missing}")
        if int(a["index"]) != index:
            raise ValueError(f"holds refit {int(a['index'])}, not {index}")
        status = str(a["status"])
        if status not in _STATUSES:
            raise ValueError(f"unknown status {status!r}")
        post = None
        if status != "error":
            if not ds.data_vars:
                raise ValueError(f"status {status!r} but no posterior draws")
            post = ds
            post.attrs = {}
        stored = a.get("config_hash")
        out = RefitOutcome(
            index,
            json.loads(a["label"]),
            status,
            str(a["reason"]),
            int(a["seed"]),
            float(a["seconds"]),
            post,
        )
        return out, None if stored is None else str(stored)

    def save(self, out: RefitOutcome) -> None:
        """Write one outcome atomically, with this audit's configuration hash."""
        ds = out.posterior.copy() if out.posterior is not None else xr.Dataset()
        ds.attrs = {
            "index": out.index,
            "label": json.dumps(_jsonable(out.label)),
            "status": out.status,
            "reason": out.reason,
            "seed": out.seed,
            "seconds": out.seconds,
            "config_hash": self.config_hash,
        }
        tmp = self._file(out.index).with_suffix(".tmp")
        ds.to_netcdf(tmp)
        os.replace(tmp, self._file(out.index))


def _jsonable(x):
    if isinstance(x, np.generic):
        return x.item()
    return x if isinstance(x, int | float | str | bool) or x is None else str(x)


def run_refits(
    engine,
    tasks: list[tuple],
    *,
    executor=None,
    checkpoint: Checkpoint | None = None,
    progressbar: bool = True,
    retry_failed: bool = True,
) -> dict[int, RefitOutcome]:
    """Run refit tasks ``(index, label, data, seed)``, skipping those already checkpointed.

    Each outcome is saved the moment it completes, so an interrupted run loses at most the
    refits in flight; rerunning with the same checkpoint refits only what is missing, what
    failed (unless ``retry_failed=False``) and what the checkpoint found damaged.

    Parameters
    ----------
    engine
        Any object with a ``sample(data, seed) -> (posterior, n_divergences)`` method.
    tasks : list of tuple
        ``(index, label, data, seed)``; ``data`` may be a callable returning the data.
    executor : optional
        Where refits run (see :func:`pymc_edp.base.parallel.map_tasks`); serially by default.
    checkpoint : Checkpoint, optional
        Restores saved outcomes and saves new ones as they complete. Damaged files it finds
        are refitted and described in ``checkpoint.messages``.
    progressbar : bool, default True
    retry_failed : bool, default True
        Refit again the neighbours whose saved outcome is a failure (status ``"error"``),
        so that a passing failure (a crashed worker, memory) does not stay in the
        checkpoint; False keeps saved failures as they are.

    Returns
    -------
    dict of int to RefitOutcome
        By task index.

    Examples
    --------
    Any engine with a ``sample(data, seed) -> (posterior, n_divergences)`` method works;
    this toy one returns a constant posterior instead of sampling:

    >>> import numpy as np, xarray as xr
    >>> from pymc_edp.refit import run_refits
    >>> class ToyEngine:
    ...     def sample(self, data, seed):
    ...         mu = np.full((1, 4), data["shift"])
    ...         return xr.Dataset({"mu": (("chain", "draw"), mu)}), 0
    >>> tasks = [(0, "a", {"shift": 1.0}, 11), (1, "b", {"shift": 2.0}, 12)]
    >>> done = run_refits(ToyEngine(), tasks, progressbar=False)
    >>> sorted(done), done[1].status, done[1].seed, float(done[1].posterior["mu"].mean())
    ([0, 1], 'ok', 12, 2.0)
    """
    from pymc_edp.base.parallel import map_tasks

    done: dict[int, RefitOutcome] = {}
    todo = []
    retried = 0
    for task in tasks:
        saved = checkpoint.load(task[0]) if checkpoint is not None else None
        if saved is not None and saved.status == "error" and retry_failed:
            retried += 1
            saved = None
        if saved is not None:
            done[task[0]] = saved
        else:
            todo.append(task)
    if retried:
        _log.info("retrying %d refit(s) that failed in an earlier run", retried)
    if todo:
        _log.info("refitting %d neighbour(s) (%d restored from checkpoint)", len(todo), len(done))

        def on_result(i, out):
            if checkpoint is not None:
                checkpoint.save(out)

        results = map_tasks(
            partial(_run_one, engine),
            todo,
            executor=executor,
            progressbar=progressbar,
            description="EDP: refitting neighbours",
            on_result=on_result,
        )
        for out in results:
            done[out.index] = out
    return done


class Refits(Mapping):
    """Refitted neighbour posteriors, indexed by neighbour label.

    ``refits[label]`` is the stack's own container (an :class:`xarray.DataTree` on ArviZ
    1.x, an :class:`arviz.InferenceData` on ArviZ 0.23) with the refit's posterior;
    :attr:`status` tabulates every refit's status, reason, seed and time.

    Examples
    --------
    Usually returned by :func:`pymc_edp.audit` as ``res.refits``; here built from two
    hand-made outcomes, one of them failed:

    >>> import numpy as np, xarray as xr
    >>> from pymc_edp.refit import RefitOutcome, Refits
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    >>> refits = Refits({
    ...     0: RefitOutcome(0, "a", "ok", "", 11, 0.5, post),
    ...     1: RefitOutcome(1, "b", "error", "ValueError: boom", 12, 0.1, None),
    ... })
    >>> refits
    Refits(2 neighbours: {'ok': 1, 'error': 1})
    >>> refits.status["status"].to_dict()
    {'a': 'ok', 'b': 'error'}
    >>> refits["a"].posterior["mu"].shape
    (1, 4)
    >>> refits["b"]
    Traceback (most recent call last):
        ...
    KeyError: "refit of 'b' failed: ValueError: boom"
    """

    def __init__(self, outcomes: dict[int, RefitOutcome]):
        self._outcomes = dict(sorted(outcomes.items()))
        self._by_label = {o.label: o for o in self._outcomes.values()}

    def __getitem__(self, label):
        out = self._by_label[label]
        if out.posterior is None:
            raise KeyError(f"refit of {label!r} failed: {out.reason}")
        return make_container({"posterior": out.posterior})

    def __iter__(self) -> Iterator:
        return iter(self._by_label)

    def __len__(self) -> int:
        return len(self._by_label)

    @property
    def status(self):
        """A :class:`pandas.DataFrame` of status, reason, seed and seconds per refit."""
        import pandas as pd

        rows = [
            {
                "neighbour": o.label,
                "status": o.status,
                "reason": o.reason,
                "seed": o.seed,
                "seconds": o.seconds,
            }
            for o in self._outcomes.values()
        ]
        return pd.DataFrame(rows).set_index("neighbour") if rows else pd.DataFrame()

    def __repr__(self) -> str:
        counts = self.status["status"].value_counts().to_dict() if len(self) else {}
        return f"Refits({len(self)} neighbours: {counts})"


# ------------------------------------------------------------------ estimation
def neighbour_changes(ll, nbs, k: int, candidate: dict | None) -> dict:
    """What neighbour ``k`` changes: per observed variable, its records and new values.

    Returns
    -------
    dict
        ``{name: (local_indices, replacement_values or None)}`` — a few numbers per
        neighbour, expanded to full data only when its refit runs
        (:class:`_NeighbourDataMaker`).
    """
    rows = nbs.rows[nbs.indptr[k] : nbs.indptr[k + 1]]
    var = np.searchsorted(ll.offsets, rows, side="right") - 1
    changes = {}
    for v, name in enumerate(ll.names):
        n_v = ll.offsets[v + 1] - ll.offsets[v]
        local = rows[var == v] - ll.offsets[v]
        values = None
        if candidate is not None:
            values = np.asarray(candidate[name]).reshape(n_v, -1)[local]
        changes[name] = (local, values)
    return changes


@dataclass(frozen=True)
class _NeighbourDataMaker:
    """Expands a neighbour's changes into the data its refit needs.

    ``pm.Data`` values of :func:`neighbour_model` (the default), or the
    :class:`NeighbourData` handed to a user's ``build_model``.
    """

    observed_y: dict
    record_shapes: dict
    builder: bool = False

    def __call__(self, index: int, label, changes: dict):
        if self.builder:
            return self._builder(index, label, changes)
        data = {}
        for name, (local, values) in changes.items():
            shape = self.record_shapes[name]
            n_v = int(np.prod(shape))
            dw = np.zeros(n_v)
            dw[local] = -1.0
            alt = np.asarray(self.observed_y[name]).copy()
            switch = np.zeros(n_v)
            if values is not None:
                alt.reshape(n_v, -1)[local] = values
                switch[local] = 1.0
            data[DW.format(name)] = dw.reshape(shape)
            data[ALT.format(name)] = alt
            data[SWITCH.format(name)] = switch.reshape(shape)
        return data

    def _builder(self, index: int, label, changes: dict) -> NeighbourData:
        observed, keep = {}, {}
        for name, (local, values) in changes.items():
            n_v = int(np.prod(self.record_shapes[name]))
            y = np.asarray(self.observed_y[name])
            mask = np.ones(n_v, dtype=bool)
            if values is None:
                mask[local] = False
                # records along the first axis (rows of a multivariate observation included)
                # are dropped; records laid over several axes are passed whole, with `keep`
                observed[name] = y[mask] if y.shape[:1] == (n_v,) else y
            else:
                alt = y.copy()
                alt.reshape(n_v, -1)[local] = values
                observed[name] = alt
            keep[name] = mask
        return NeighbourData(label, index, observed, keep)


def log_ratio_at(
    loglik_fns: dict,
    ll,
    nbs,
    k: int,
    posterior: xr.Dataset,
    observed_y: dict,
    candidate: dict | None,
) -> np.ndarray:
    """``log p(theta | D') - log p(theta | D)`` up to a constant, at every draw of ``posterior``.

    Removal: minus the log-likelihood of the neighbour's rows; replacement: the
    log-likelihood at the replacement values minus that at the data.
    """
    rows = nbs.rows[nbs.indptr[k] : nbs.indptr[k + 1]]
    var = np.searchsorted(ll.offsets, rows, side="right") - 1
    total = None
    for v in np.unique(var):
        name = ll.names[v]
        local = rows[var == v] - ll.offsets[v]
        y = np.asarray(observed_y[name])
        term = -loglik_fns[name](posterior, y)[:, local].sum(axis=1)
        if candidate is not None:
            term = term + loglik_fns[name](posterior, candidate[name])[:, local].sum(axis=1)
        total = term if total is None else total + term
    return total


@dataclass
class RefitRun:
    """Outcomes and bin-probability estimates of the refitted neighbours."""

    outcomes: dict
    estimates: dict
    collection: Refits


def _estimate(
    post: xr.Dataset, k: int, *, names, bins_obj, smoothing, estimator, lr_full, lr_refit
) -> tuple[np.ndarray, np.ndarray]:
    from pymc_edp.base import binning
    from pymc_edp.model.loglik import posterior_matrix

    refit_draws, _, _ = posterior_matrix(post, names)
    if estimator == "raw" or lr_refit is None:
        return binning.refit_epsilon(refit_draws, bins_obj, smoothing)
    return binning.refit_epsilon(refit_draws, bins_obj, smoothing, lr_full, lr_refit)


def refit_neighbours(
    to_refit: np.ndarray,
    *,
    idata,
    model,
    build_model,
    ll,
    nbs,
    names,
    par_labels,
    bins_obj,
    observed_y: dict,
    candidates: dict | None,
    worst_cand: np.ndarray,
    full_log_ratio: Callable[[int], np.ndarray],
    smoothing: float,
    estimator: str,
    config: dict,
    engine,
    draws: int,
    tune: int,
    chains: int,
    executor,
    checkpoint,
    random_seed,
    progressbar: bool,
    sampler_kwargs: dict | None = None,
    retry_failed: bool = True,
) -> tuple[RefitRun, list[str]]:
    """Refit neighbours ``to_refit`` and estimate their epsilon; used by :func:`audit`.

    Parameters
    ----------
    to_refit : numpy.ndarray
        Indices of the neighbours to refit.
    config : dict
        What the refits depend on; checks (and is stored in) the checkpoint.
    engine : {"nutpie", "pymc"} or None
        None picks nutpie when installed, PyMC for models with discrete latent variables.
    checkpoint : path-like or None
        Folder of saved refits (:class:`Checkpoint`); damaged files in it are refitted.
    random_seed : int or None
        Refit ``k`` uses :func:`refit_seed` ``(random_seed, k)``.
    sampler_kwargs : dict, optional
        Passed to every refit's sampler.
    retry_failed : bool, default True
        Refit again neighbours whose checkpointed refit failed; False keeps the failures.

    The other keywords describe the audit (log-likelihood ``ll``, neighbours ``nbs``,
    bins, estimator, ...) as :func:`pymc_edp.audit` prepares them.

    Returns
    -------
    RefitRun
        Outcomes, bin-probability estimates and the :class:`Refits` collection.
    list of str
        Messages for the caller to show as warnings: failed and divergent refits, and the
        damaged checkpoint files (or manifest) that were set aside and refitted.
    """
    from pymc_edp.model.pymc import ElementwiseLogLik

    messages = []
    missing = [n for n in ll.names if n not in observed_y]
    if missing:
        raise ValueError(f"cannot find the observed values of {missing} needed to refit")

    def candidate(k):
        if candidates is None:
            return None
        return {n: candidates[n][min(worst_cand[k], candidates[n].shape[0] - 1)] for n in ll.names}

    if build_model is not None:
        eng = make_engine(
            engine,
            build_model=build_model,
            draws=draws,
            tune=tune,
            chains=chains,
            var_names=names,
        )
        loglik_fns = None
        if estimator == "pooled":
            messages.append(
                "refits through build_model use the raw estimator (refit draws only): without a "
                "factorised likelihood the density ratio needed to pool the draws is unknown"
            )
    else:
        try:
            nb_model = neighbour_model(model, ll.names)
        except NonFactorisedError as err:
            raise ValueError(str(err)) from None
        keep = tuple(dict.fromkeys([*names, *(rv.name for rv in model.free_RVs)]))
        eng = make_engine(
            engine,
            model=nb_model,
            draws=draws,
            tune=tune,
            chains=chains,
            var_names=keep,
            sampler_kwargs=sampler_kwargs,
        )
        loglik_fns = (
            {n: ElementwiseLogLik(model, n) for n in ll.names} if estimator == "pooled" else None
        )

    maker = _NeighbourDataMaker(
        observed_y={n: observed_y[n] for n in ll.names},
        record_shapes={n: tuple(ll.datasets[n].shape[2:]) for n in ll.names},
        builder=build_model is not None,
    )
    tasks = []
    for k in to_refit:
        k = int(k)
        label = _jsonable(nbs.labels[k])
        lazy = partial(maker, k, label, neighbour_changes(ll, nbs, k, candidate(k)))
        tasks.append((k, label, lazy, refit_seed(random_seed, k)))
    ckpt = Checkpoint(checkpoint, config) if checkpoint is not None else None
    try:
        outcomes = run_refits(
            eng,
            tasks,
            executor=executor,
            checkpoint=ckpt,
            progressbar=progressbar,
            retry_failed=retry_failed,
        )
    finally:
        if ckpt is not None:
            messages.extend(ckpt.messages)

    estimates = {}
    failed = []
    for k in to_refit:
        out = outcomes[int(k)]
        if out.posterior is None:
            estimates[int(k)] = None
            failed.append(f"{nbs.labels[k]} ({out.reason})")
            continue
        lr_refit = lr_full = None
        if loglik_fns is not None:
            lr_full = full_log_ratio(int(k))
            lr_refit = log_ratio_at(
                loglik_fns, ll, nbs, int(k), out.posterior, observed_y, candidate(k)
            )
        estimates[int(k)] = _estimate(
            out.posterior,
            int(k),
            names=names,
            bins_obj=bins_obj,
            smoothing=smoothing,
            estimator=estimator,
            lr_full=lr_full,
            lr_refit=lr_refit,
        )
    if failed:
        messages.append(
            f"{len(failed)} refit(s) failed and kept their reweighted estimate: "
            + "; ".join(failed[:5])
            + ("..." if len(failed) > 5 else "")
        )
    diverged = [o for o in outcomes.values() if o.status == "diverged"]
    if diverged:
        messages.append(
            f"{len(diverged)} refit(s) had divergent transitions (see res.pointwise['status'] "
            "and res.refits.status); their draws are used but may be biased"
        )
    return RefitRun(outcomes, estimates, Refits(outcomes)), messages
