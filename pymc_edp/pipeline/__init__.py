"""The stages of :func:`pymc_edp.audit`, in order: inputs, reweighting, matching, verification.

:mod:`~pymc_edp.pipeline.assembly` builds the :class:`~pymc_edp.EDPResult`. Each stage
returns new :class:`~pymc_edp.pipeline.estimates.Estimates` and leaves those it was given
unchanged.
"""
