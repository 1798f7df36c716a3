"""The stages of :func:`pymc_edp.audit`, each a function that returns what it computed.

:func:`pymc_edp.audit` (in :mod:`pymc_edp.auditing`) checks its arguments into one
:class:`~pymc_edp.pipeline.settings.Settings`, then runs the stages in order:

* :mod:`~pymc_edp.pipeline.inputs` reads the fit once (posterior draws, observed values,
  pointwise log-likelihood, neighbours, replacements) into a frozen
  :class:`~pymc_edp.pipeline.inputs.Inputs`;
* :mod:`~pymc_edp.pipeline.reweighting` reweights every neighbour (chunked, pruned);
* :mod:`~pymc_edp.pipeline.matching` moment-matches those with a bad k-hat;
* :mod:`~pymc_edp.pipeline.verification` refits those still bad and confirms the headline;
* :mod:`~pymc_edp.pipeline.assembly` builds the :class:`~pymc_edp.EDPResult`.

Per-neighbour estimates travel as :class:`~pymc_edp.pipeline.estimates.Estimates`: a stage
returns new ones (with its messages) and leaves those it was given unchanged.
"""
