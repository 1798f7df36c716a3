"""Empirical differential privacy (EDP) audits of PyMC posteriors.

``pymc_edp.audit(idata)`` answers "if one record were removed or changed, how far would this
posterior move?" as a B-EDP epsilon; :func:`audit_release` audits what is published and
:func:`tune_prior` tunes a prior to a target. EDP measures sensitivity; it is not a
differential-privacy guarantee (Charest & Han, 2017).
"""

import logging

from pymc_edp.model.compat import import_arviz

import_arviz()

# as PyMC does: INFO lines (what long work will cost, how far it is) reach the user unless
# the application configured logging; logging.getLogger("pymc_edp").setLevel(...) quietens
_log = logging.getLogger("pymc_edp")
if not logging.root.handlers:
    _log.setLevel(logging.INFO)
    if not _log.handlers:
        _log.addHandler(logging.StreamHandler())

from pymc_edp import (  # noqa: E402
    conjugate,
    diagnostics,
    plots,
    query,
    refit,
    release,
    report,
    risk,
    tuning,
)
from pymc_edp.auditing import (  # noqa: E402
    Auto,
    ChunkOptions,
    Method,
    MomentMatch,
    MomentMatchOptions,
    PerRecord,
    Psis,
    Refit,
    audit,
)
from pymc_edp.base.common import EDPWarning  # noqa: E402
from pymc_edp.core.neighbours import NeighbourOptions, Relation, Remove, Replace  # noqa: E402
from pymc_edp.refit.options import RefitOptions, VerifyOptions  # noqa: E402
from pymc_edp.release.auditing import audit_release  # noqa: E402
from pymc_edp.release.options import ReleaseOptions  # noqa: E402
from pymc_edp.results.edp import EDPResult  # noqa: E402
from pymc_edp.results.release import ReleaseResult  # noqa: E402
from pymc_edp.results.tuning import PriorTuningResult  # noqa: E402
from pymc_edp.tuning.prior import tune_prior  # noqa: E402
from pymc_edp.tuning.search import SearchOptions  # noqa: E402

__version__ = "0.8.0"

__all__ = [
    "Auto",
    "ChunkOptions",
    "EDPResult",
    "EDPWarning",
    "Method",
    "MomentMatch",
    "MomentMatchOptions",
    "NeighbourOptions",
    "PerRecord",
    "PriorTuningResult",
    "Psis",
    "Refit",
    "RefitOptions",
    "Relation",
    "ReleaseOptions",
    "ReleaseResult",
    "Remove",
    "Replace",
    "SearchOptions",
    "VerifyOptions",
    "__version__",
    "audit",
    "audit_release",
    "conjugate",
    "diagnostics",
    "plots",
    "query",
    "refit",
    "release",
    "report",
    "risk",
    "tune_prior",
    "tuning",
]
