"""How refits are run: one frozen options object shared by the audit and the prior tuner."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from pymc_edp.base.validate import as_options, check_choice, check_int

__all__ = ["ESTIMATORS", "RefitOptions"]

ESTIMATORS = ("pooled", "raw")


@dataclass(frozen=True)
class RefitOptions:
    """How neighbours are refitted when reweighting cannot be trusted.

    Parameters
    ----------
    draws, tune, chains : int, default 1000, 1000, 2
        Per refit.
    engine : {"nutpie", "pymc", None}, default None
        Refit sampler; None picks nutpie when installed (PyMC for models with discrete
        latent variables). Either compiles the neighbour model once and only swaps its data.
    executor : None, int, concurrent.futures.Executor or dask.distributed.Client, optional
        Where refits run: serially (None; nutpie already runs chains in parallel), a local
        process pool of that many workers (-1: all cores), or any executor / dask client.
    checkpoint : str or path-like, optional
        Folder where each refit is written as it completes; rerunning the same audit with
        the same folder refits only what is missing.
    max_refits : int, optional
        Refit at most this many neighbours, worst k-hat first; the rest keep their
        reweighted estimates and are named in a warning.
    build_model : callable, optional
        ``build_model(data) -> pm.Model`` for models whose likelihood does not factorise;
        ``data`` is a :class:`pymc_edp.refit.NeighbourData` mapping observed names to each
        neighbour's values.
    estimator : {"pooled", "raw"}, default "pooled"
        How a refit's bin probabilities are estimated: ``"pooled"`` combines the refit draws
        with the reweighted full-data draws by multiple importance sampling (balance
        heuristic); ``"raw"`` counts the refit draws alone (Charest & Han's procedure, biased
        upward at small draw counts).
    sampler_kwargs : dict, optional
        Passed to every refit's sampler (``nutpie.sample`` or ``pm.sample``), e.g.
        ``{"target_accept": 0.95}``.
    retry_failed : bool, default True
        With ``checkpoint``: refit again the neighbours whose refit failed in an earlier
        run (a flaky builder, a lost worker); ``False`` keeps the recorded failures.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the refit
       estimator).

    Examples
    --------
    >>> import pymc_edp as edp
    >>> opts = edp.RefitOptions(draws=500, tune=500, max_refits=10)
    >>> opts.chains, opts.estimator
    (2, 'pooled')
    >>> edp.RefitOptions.coerce({"draws": 200}).draws
    200
    """

    draws: int = 1000
    tune: int = 1000
    chains: int = 2
    engine: str | None = None
    executor: object = None
    checkpoint: str | os.PathLike | None = None
    max_refits: int | None = None
    build_model: Callable | None = None
    estimator: str = "pooled"
    sampler_kwargs: Mapping | None = None
    retry_failed: bool = True

    def __post_init__(self):
        check_int(self.draws, "draws", 1)
        check_int(self.tune, "tune", 0)
        check_int(self.chains, "chains", 1)
        check_int(self.max_refits, "max_refits", 0, allow_none=True)
        check_choice(self.estimator, "estimator", ESTIMATORS)
        if self.engine is not None:
            check_choice(self.engine, "engine", ("nutpie", "pymc"))
        if self.build_model is not None and not callable(self.build_model):
            raise TypeError("build_model must be a callable build_model(data) -> pm.Model")
        if self.sampler_kwargs is not None and not isinstance(self.sampler_kwargs, Mapping):
            raise TypeError("sampler_kwargs must be a dict of keyword arguments for the sampler")

    @classmethod
    def coerce(cls, value: RefitOptions | Mapping | None) -> RefitOptions:
        """``value`` as options: None gives the defaults, a dict its fields."""
        return as_options(cls, value, "refit")

    def config(self) -> dict:
        """What the refits depend on, for the checkpoint (not bins or estimator)."""
        return dict(
            draws=self.draws,
            tune=self.tune,
            chains=self.chains,
            engine=self.engine or "default",
            builder=self.build_model is not None,
            sampler_kwargs={k: repr(v) for k, v in (self.sampler_kwargs or {}).items()},
        )
