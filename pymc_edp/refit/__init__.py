"""Exact refits of neighbour posteriors: one compiled model, parallel, resumable.

The refits of a factorised likelihood differ only by data
(:func:`~pymc_edp.model.transform.neighbour_model`) and compile once: engines
(:mod:`~pymc_edp.refit.engines`), checkpoints, outcomes, orchestration (:mod:`~pymc_edp.refit.run`)
and the audit's options (:class:`pymc_edp.RefitOptions`, :class:`pymc_edp.VerifyOptions`).

References
----------
.. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
   Privacy." Journal of Privacy and Confidentiality 7(3), 2017 (sec. 4: the refit estimator).
"""

from pymc_edp.model.transform import NeighbourData, neighbour_model
from pymc_edp.refit.checkpoint import Checkpoint, config_hash
from pymc_edp.refit.engines import Engine, RefitInterrupted
from pymc_edp.refit.outcome import RefitOutcome, Refits, RefitTask, refit_seed
from pymc_edp.refit.run import run_refits

__all__ = [
    "Checkpoint",
    "Engine",
    "NeighbourData",
    "RefitInterrupted",
    "RefitOutcome",
    "RefitTask",
    "Refits",
    "config_hash",
    "neighbour_model",
    "refit_seed",
    "run_refits",
]
