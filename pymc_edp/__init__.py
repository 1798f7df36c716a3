"""Empirical differential privacy (EDP) audits of PyMC posteriors.

``pymc_edp.audit(idata)`` answers "if one record were removed or changed, how far would this
posterior move?" as a B-EDP epsilon with its diagnostics. EDP is a sensitivity measure of the
posterior, not a differential-privacy guarantee (Charest & Han, 2017).
"""

from pymc_edp.model.compat import import_arviz

import_arviz()

from pymc_edp import calibration, conjugate, diagnostics, plots, query, refit, risk, tuning  # noqa: E402
from pymc_edp.audit import PerRecord, audit  # noqa: E402
from pymc_edp.result import EDPResult, EDPWarning  # noqa: E402
from pymc_edp.tuning import PriorTuningResult, tune_prior  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "EDPResult",
    "EDPWarning",
    "PerRecord",
    "PriorTuningResult",
    "__version__",
    "audit",
    "calibration",
    "conjugate",
    "diagnostics",
    "plots",
    "query",
    "refit",
    "risk",
    "tune_prior",
    "tuning",
]
