"""What an audit and a prior tuning return: frozen containers of data, with their I/O.

* :class:`~pymc_edp.results.edp.EDPResult` -- what :func:`pymc_edp.audit` returns;
* :class:`~pymc_edp.results.tuning.PriorTuningResult` -- what :func:`pymc_edp.tune_prior`
  returns.

Results hold data and nothing else computes inside them: the diagnostics
(:mod:`pymc_edp.diagnostics`), the report (:mod:`pymc_edp.report`) and the figures
(:mod:`pymc_edp.plots`) are functions that read them. Both classes are public as
``pymc_edp.EDPResult`` and ``pymc_edp.PriorTuningResult``.
"""
