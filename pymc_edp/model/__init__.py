"""PyMC and ArviZ glue: everything that knows about a ``pm.Model`` or a posterior container.

:mod:`~pymc_edp.model.compat` holds every difference between the PyMC 5 / ArviZ 0.23 and
PyMC 6 / ArviZ 1.x stacks; :mod:`~pymc_edp.model.pymc` compiles what the audit needs from
the model; :mod:`~pymc_edp.model.stream` computes log-likelihood rows from it. What needs
neither PyMC nor ArviZ (neighbours, log ratios, reweighting) is in :mod:`pymc_edp.core`.
"""
