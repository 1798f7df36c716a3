"""What an audit and a prior tuning return: frozen containers of data, with their I/O.

* :class:`~pymc_edp.results.edp.EDPResult` -- what :func:`pymc_edp.audit` returns;
* :class:`~pymc_edp.results.tuning.PriorTuningResult` -- what :func:`pymc_edp.tune_prior`
  returns.

Results hold data; views are functions. Nothing computes inside a result: the diagnostics
(:mod:`pymc_edp.diagnostics`), the report (:mod:`pymc_edp.report`: the printout, the
headline, ``diagnose``) and the figures and HTML view (:mod:`pymc_edp.plots`) are functions
that read them, and what the diagnostics compute is cached by the diagnostics, not stored
on the result.

The results sit below those layers and import none of them. Their convenience methods
(``res.interval()``, ``res.plot()``, ``repr(res)``, ``res._repr_html_()``, ...) keep their
signatures and docstrings and delegate by name to :mod:`pymc_edp.results._views`: a
registry ``{name: function}`` filled by :mod:`pymc_edp.views` (the layer above the plots),
which ``import pymc_edp`` imports. ``_views.call(name, res, *args, **kwargs)`` calls the
function registered under ``name``, and raises
:class:`~pymc_edp.results._views.ViewNotRegisteredError` if there is none (``repr`` then
falls back to one plain line). Both classes are public as ``pymc_edp.EDPResult`` and
``pymc_edp.PriorTuningResult``.
"""
