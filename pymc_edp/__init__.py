"""Empirical differential privacy (EDP) audits of PyMC posteriors.

``pymc_edp.audit(idata)`` answers "if one record were removed or changed, how far would this
posterior move?" as a B-EDP epsilon with its diagnostics. EDP is a sensitivity measure of the
posterior, not a differential-privacy guarantee (Charest & Han, 2017).

The package is layered; each layer imports only the ones below it:

* :mod:`pymc_edp.base` -- NumPy/numba kernels (bins and epsilon, PSIS, MCSE, hockey-stick);
* :mod:`pymc_edp.model` -- PyMC and ArviZ glue (log-likelihood, neighbours, stack
  differences), and the exact references of :mod:`pymc_edp.conjugate`;
* :mod:`pymc_edp.refit` -- exact refits; :mod:`pymc_edp.risk` -- disclosure risk;
  :mod:`pymc_edp.query` -- query-level privacy;
* :mod:`pymc_edp.diagnostics` -- the numbers of how far to trust an audit;
* :mod:`pymc_edp.results` -- :class:`EDPResult` and :class:`PriorTuningResult`, data only;
* :mod:`pymc_edp.report` -- the words (printout, headline, k-hat counts), then
  :mod:`pymc_edp.plots` -- the figures and HTML views, then :mod:`pymc_edp.views`, which
  registers those functions behind the results' methods;
* :func:`audit` (its stages in :mod:`pymc_edp.pipeline`), then :func:`audit_release` (what
  is published: draws, synthetic data; :mod:`pymc_edp.release`), then :func:`tune_prior`,
  then the command line.
"""

from pymc_edp.model.compat import import_arviz

import_arviz()

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
    AuditOptions,
    ChunkOptions,
    MomentMatchOptions,
    PerRecord,
    audit,
)
from pymc_edp.base.common import EDPWarning  # noqa: E402
from pymc_edp.model.neighbours import NeighbourOptions  # noqa: E402
from pymc_edp.refit.options import RefitOptions, VerifyOptions  # noqa: E402
from pymc_edp.release.auditing import audit_release  # noqa: E402
from pymc_edp.release.options import ReleaseOptions  # noqa: E402
from pymc_edp.results.edp import EDPResult  # noqa: E402
from pymc_edp.results.release import ReleaseResult  # noqa: E402
from pymc_edp.results.tuning import PriorTuningResult  # noqa: E402
from pymc_edp.tuning.prior import tune_prior  # noqa: E402
from pymc_edp.tuning.release import ReleaseTarget  # noqa: E402
from pymc_edp.tuning.search import SearchOptions  # noqa: E402

__version__ = "0.7.0"

__all__ = [
    "AuditOptions",
    "ChunkOptions",
    "EDPResult",
    "EDPWarning",
    "MomentMatchOptions",
    "NeighbourOptions",
    "PerRecord",
    "PriorTuningResult",
    "RefitOptions",
    "ReleaseOptions",
    "ReleaseResult",
    "ReleaseTarget",
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
