"""How refits are run: one frozen options object shared by the audit and the prior tuner."""

from __future__ import annotations

import dataclasses
import numbers
import os
from collections.abc import Callable, Collection, Mapping
from dataclasses import dataclass
from typing import ClassVar

from pymc_edp.base.validate import as_options, check_choice, check_int, check_real
from pymc_edp.runtime.parallel import check_executor

__all__ = [
    "ESTIMATORS",
    "VERIFICATION_MEANINGS",
    "VERIFY_AGREE",
    "VERIFY_DISAGREE",
    "VERIFY_FAILED",
    "RefitOptions",
    "VerifyOptions",
]

ESTIMATORS = ("pooled", "raw")
#: Refit sizes when neither the options nor the fit give them (PyMC's ``pm.sample``).
DEFAULT_SIZE = {"draws": 1000, "tune": 1000, "chains": 2}
#: Per-neighbour verification codes (``pointwise["verification"]``, CF flag values).
VERIFY_AGREE, VERIFY_DISAGREE, VERIFY_FAILED = 1, 2, 3
VERIFICATION_MEANINGS = ("unchecked", "agrees", "disagrees", "failed")
#: What ``RefitOptions(retry=...)`` can name.
RETRY_KINDS = ("divergent", "failed")


def _retry_kinds(value) -> tuple[str, ...]:
    if value is True:
        return RETRY_KINDS
    if value is False:
        return ()
    if isinstance(value, str) or not isinstance(value, Collection):
        raise TypeError(
            f"retry must be True, False or a collection of {RETRY_KINDS}, got {value!r}"
        )
    kinds = tuple(sorted(set(value)))
    unknown = [k for k in kinds if k not in RETRY_KINDS]
    if unknown:
        raise ValueError(f"retry: unknown kind(s) {unknown}; choose from {RETRY_KINDS}")
    return kinds


@dataclass(frozen=True)
class RefitOptions:
    """How neighbours are refitted when reweighting cannot be trusted.

    Parameters
    ----------
    draws, tune, chains : int, optional
        Per refit. Default: the audited fit's, as its posterior records them (draws per
        chain, chains, ``tuning_steps``), else PyMC's 1000, 1000 and 2
        (:meth:`for_fit`).
    engine : {"nutpie", "pymc", None}, default None
        Refit sampler; None picks nutpie when installed (PyMC for discrete latent
        variables). Either compiles the neighbour model once and swaps its data.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client, optional
        Where refits run. None: one after another, or nutpie refits side by side in threads
        when the cores hold several refits' chains (:func:`pymc_edp.refit.run.refit_pool`).
        An int: a local process pool of that many workers (-1: all cores). Process pools
        that ``fork`` where unsafe are refused, as in :class:`pymc_edp.ChunkOptions`.
    checkpoint : str or path-like, optional
        Folder where each refit is written as it completes; a rerun refits only what is
        missing.
    max_refits : int, optional
        Refit at most this many neighbours, worst k-hat first; the rest keep their
        reweighted estimates and are named in a warning.
    build_model : callable, optional
        ``build_model(data) -> pm.Model`` for likelihoods that do not factorise; ``data`` is
        a :class:`pymc_edp.refit.NeighbourData`.
    estimator : {"pooled", "raw"}, default "pooled"
        ``"pooled"`` combines the refit draws with the reweighted full-data draws by
        multiple importance sampling; ``"raw"`` counts refit draws alone (Charest & Han's
        procedure [1]_, biased upward at small draw counts).
    sampler_kwargs : dict, optional
        Passed to every refit's sampler, e.g. ``{"target_accept": 0.95}``.
    retry : bool or collection of {"failed", "divergent"}, default True
        Refitted again: ``"failed"`` refits of an earlier run (with ``checkpoint``);
        ``"divergent"`` refits, at ``target_accept`` 0.95 then 0.99. ``True``: both.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the refit
       estimator).

    Examples
    --------
    >>> opts = edp.RefitOptions(draws=500, tune=500, max_refits=10)
    >>> opts.chains, opts.for_fit().chains, opts.estimator
    (None, 2, 'pooled')
    >>> edp.RefitOptions.coerce({"draws": 200}).draws
    200
    >>> edp.RefitOptions(retry=False).retry, edp.RefitOptions().retry
    ((), ('divergent', 'failed'))
    """

    draws: int | None = None
    tune: int | None = None
    chains: int | None = None
    engine: str | None = None
    executor: object = None
    checkpoint: str | os.PathLike | None = None
    max_refits: int | None = None
    build_model: Callable | None = None
    estimator: str = "pooled"
    sampler_kwargs: Mapping | None = None
    retry: bool | Collection[str] = True

    #: Options of version 0.8 that moved (``RefitOptions.coerce`` says where).
    MOVED: ClassVar[dict[str, str]] = {
        "verify": "moved to the method in 0.9: method=edp.Auto(verify=...)"
    }

    def __post_init__(self):
        check_int(self.draws, "draws", 1, allow_none=True)
        check_int(self.tune, "tune", 0, allow_none=True)
        check_int(self.chains, "chains", 1, allow_none=True)
        check_int(self.max_refits, "max_refits", 0, allow_none=True)
        check_choice(self.estimator, "estimator", ESTIMATORS)
        if self.engine is not None:
            check_choice(self.engine, "engine", ("nutpie", "pymc"))
        if self.build_model is not None and not callable(self.build_model):
            raise TypeError("build_model must be a callable build_model(data) -> pm.Model")
        if self.sampler_kwargs is not None and not isinstance(self.sampler_kwargs, Mapping):
            raise TypeError("sampler_kwargs must be a dict of keyword arguments for the sampler")
        object.__setattr__(self, "retry", _retry_kinds(self.retry))
        check_executor(self.executor, "RefitOptions")

    @classmethod
    def coerce(cls, value: RefitOptions | Mapping | None) -> RefitOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "refit")

    def for_fit(self, posterior=None) -> RefitOptions:
        """These options with ``draws``, ``tune`` and ``chains`` left unset taken from the fit.

        ``posterior``: the audited posterior, whose sizes and ``tuning_steps`` attribute (PyMC
        and nutpie record it) say them; without one, or where it does not say, PyMC's defaults.

        Examples
        --------
        >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((4, 500)))},
        ...                   attrs={"tuning_steps": 300})
        >>> opts = edp.RefitOptions(draws=200).for_fit(post)
        >>> opts.draws, opts.tune, opts.chains
        (200, 300, 4)
        """
        sizes = getattr(posterior, "sizes", {})
        attrs = getattr(posterior, "attrs", {})
        tuned = attrs.get("tuning_steps")
        fit = dict(
            draws=int(sizes.get("draw", DEFAULT_SIZE["draws"])),
            tune=int(tuned) if isinstance(tuned, numbers.Integral) else DEFAULT_SIZE["tune"],
            chains=int(sizes.get("chain", DEFAULT_SIZE["chains"])),
        )
        unset = {k: v for k, v in fit.items() if getattr(self, k) is None}
        return dataclasses.replace(self, **unset) if unset else self

    def size(self) -> str:
        """What each refit samples, in words (after :meth:`for_fit`)."""
        return f"{self.chains} chain(s) x {self.draws} draws after {self.tune} tuning steps"

    @property
    def retry_failed(self) -> bool:
        """Whether refits that failed in an earlier run (``checkpoint``) run again."""
        return "failed" in self.retry

    @property
    def retry_divergent(self) -> bool:
        """Whether a refit with divergent transitions is sampled again."""
        return "divergent" in self.retry

    def config(self) -> dict:
        """What the refits depend on, for the checkpoint (not bins or estimator)."""
        return dict(
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            engine=self.engine or "default",
            builder=self.build_model is not None,
            retry_divergent=self.retry_divergent,
            sampler_kwargs={k: repr(v) for k, v in (self.sampler_kwargs or {}).items()},
        )


@dataclass(frozen=True)
class VerifyOptions:
    """How ``method="auto"`` confirms its headline epsilon by refitting the worst neighbours.

    A good k-hat is not proof: where a neighbour's posterior goes where the full-data draws
    barely do (a group left out of a hierarchical model), estimates can be far too low with
    k-hat below 0.7. The ``top`` neighbours with the largest estimates (and those at a
    resolution limit a refit can resolve) are refitted; a refit and its estimate disagree
    when ``|refit - estimate| > z sqrt(se_refit^2 + se_estimate^2)``, the root at least
    1.5e-8, what float64 resolves of a log ratio (two epsilons of 0 up to rounding agree). On
    a disagreement the refit values are used and refitting goes on, worst first, for every
    neighbour that could still reach the headline (scaled by the largest underestimate seen),
    within the budget; those left over are lower bounds (limit ``unverified``).

    Parameters
    ----------
    top : int, default 5
        Worst neighbours refitted to confirm the headline. They share one compiled model
        kept while the model lives (docs/benchmarks.md gives costs).
    max_refits : int, default 20
        Most verification refits in all, the first ``top`` included.
    time_budget : float, optional
        Seconds after which no further batch starts (the first ``top`` always run).
    z : float, default 3.0
        Standardised difference above which a refit and an estimate disagree.
    early_stop : bool, default True
        Refit short first (a quarter of the draws and tuning, warm-started,
        :func:`pymc_edp.refit.warm.warm_start`); keep a short refit that settles its
        comparison and cannot set epsilon, refit the others at full length. What sets
        epsilon when a batch starts is refitted at full length at once. Not with
        ``build_model``.
    warm_start : bool, default True
        Under ``method="auto"``, refits (verification's, and those of neighbours whose k-hat
        is too high) start at full-data draws, with the fit's mass matrix (PyMC's NUTS), and
        tune a quarter as long (:func:`pymc_edp.refit.warm.warm_tune`); ``False`` starts them
        at the model's initial point with the whole tuning. Short verification refits always
        start warm; ``method="refit"`` refits, and refits of groups (``groups=``), whose
        posterior can move far from the fit's, always start cold. Not with ``build_model``.

    Examples
    --------
    >>> opts = edp.VerifyOptions(top=3, time_budget=600)
    >>> opts.top, opts.max_refits, opts.z
    (3, 20, 3.0)
    >>> edp.VerifyOptions.coerce({"top": 1}).top
    1
    """

    top: int = 5
    max_refits: int = 20
    time_budget: float | None = None
    z: float = 3.0
    early_stop: bool = True
    warm_start: bool = True

    def __post_init__(self):
        check_int(self.top, "top", 1)
        check_int(self.max_refits, "max_refits", 1)
        if self.max_refits < self.top:
            raise ValueError(
                f"VerifyOptions(max_refits={self.max_refits}) is below top={self.top}: the "
                "budget must cover the first refits"
            )
        if self.time_budget is not None:
            check_real(self.time_budget, "time_budget", positive=True)
        check_real(self.z, "z", positive=True)
        if not isinstance(self.early_stop, bool):
            raise TypeError(f"early_stop must be True or False, got {self.early_stop!r}")
        if not isinstance(self.warm_start, bool):
            raise TypeError(f"warm_start must be True or False, got {self.warm_start!r}")

    @classmethod
    def coerce(cls, value: VerifyOptions | Mapping | None) -> VerifyOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "verify")
