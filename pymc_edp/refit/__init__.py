"""Exact refits of neighbour posteriors: one compiled model, parallel, resumable.

For a factorised likelihood every neighbour posterior is the same model with a per-record
weight (:func:`~pymc_edp.model.transform.neighbour_model`), so the refits differ only by
data and compile once. :mod:`~pymc_edp.refit.engines` holds the samplers (an
:class:`~pymc_edp.refit.engines.Engine` is anything with ``sample(data, seed)``),
:mod:`~pymc_edp.refit.checkpoint` the folder that saves each refit as it finishes,
:mod:`~pymc_edp.refit.outcome` what a refit produced, :mod:`~pymc_edp.refit.run` the
orchestration and the refit estimator, :mod:`~pymc_edp.refit.options` the options the audit
takes, public as :class:`pymc_edp.RefitOptions` and :class:`pymc_edp.VerifyOptions`.

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
