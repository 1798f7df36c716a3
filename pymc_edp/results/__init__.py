"""What an audit and a prior tuning return: frozen containers of data, with their I/O.

:class:`~pymc_edp.results.edp.EDPResult` (from :func:`pymc_edp.audit`) and
:class:`~pymc_edp.results.tuning.PriorTuningResult` (from :func:`pymc_edp.tune_prior`) hold
data; their methods (``res.interval()``, ``res.plot()``, ``repr(res)``, ...) call the
functions of :mod:`pymc_edp.diagnostics`, :mod:`pymc_edp.report` and :mod:`pymc_edp.plots`,
which read a result without importing its class.
"""
