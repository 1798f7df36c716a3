"""Empirical differential privacy (EDP) audits of PyMC posteriors.

``pymc_edp.audit(idata)`` answers "if one record were removed or changed, how far would this
posterior move?" as a B-EDP epsilon with its diagnostics. EDP is a sensitivity measure of the
posterior, not a differential-privacy guarantee (Charest & Han, 2017).

The package is layered; each layer imports only the ones below it:

* :mod:`pymc_edp.base` -- NumPy/numba kernels (bins and epsilon, PSIS, MCSE, hockey-stick);
* :mod:`pymc_edp.model` -- PyMC and ArviZ glue (log-likelihood, neighbours, stack
  differences), and the exact references of :mod:`pymc_edp.conjugate`;
* :mod:`pymc_edp.refit` -- exact refits; :mod:`pymc_edp.risk` -- disclosure risk;
* :mod:`pymc_edp.diagnostics`, then :mod:`pymc_edp.plots`;
* :class:`EDPResult` and :mod:`pymc_edp.query`;
* :func:`audit`, then :func:`tune_prior`, then the command line.
"""

from pymc_edp.model.compat import import_arviz

import_arviz()

from pymc_edp import (  # noqa: E402
    conjugate,
    diagnostics,
    plots,
    query,
    refit,
    risk,
    tuning,
)
from pymc_edp.auditing import ChunkOptions, MomentMatchOptions, PerRecord, audit  # noqa: E402
from pymc_edp.base.common import EDPWarning  # noqa: E402
from pymc_edp.refit.options import RefitOptions, VerifyOptions  # noqa: E402
from pymc_edp.results.edp import EDPResult  # noqa: E402
from pymc_edp.results.tuning import PriorTuningResult  # noqa: E402
from pymc_edp.tuning import SearchOptions, tune_prior  # noqa: E402

__version__ = "0.4.0"

__all__ = [
    "ChunkOptions",
    "EDPResult",
    "EDPWarning",
    "MomentMatchOptions",
    "PerRecord",
    "PriorTuningResult",
    "RefitOptions",
    "SearchOptions",
    "VerifyOptions",
    "__version__",
    "audit",
    "conjugate",
    "diagnostics",
    "plots",
    "query",
    "refit",
    "risk",
    "tune_prior",
    "tuning",
]
