"""Audits of what is published from a posterior: draws, synthetic datasets, statistics.

:func:`pymc_edp.audit_release` gives the (epsilon, delta) of ``k`` releases per neighbour and
for the worst, by composing each neighbour's privacy loss distribution
(:mod:`pymc_edp.base.pld`). The public names are those of :mod:`pymc_edp`.
"""
