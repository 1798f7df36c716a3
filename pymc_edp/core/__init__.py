"""The audit's PyMC-free core: neighbours, log ratios, reweighting and variable selection.

Nothing in :mod:`pymc_edp.core` imports PyMC, PyTensor or ArviZ, or a module of
:mod:`pymc_edp` above ``base``: it works on xarray Datasets and NumPy arrays.
:mod:`~pymc_edp.core.neighbours` holds the neighbour relations (``Remove``, ``Replace``) and
which log-likelihood rows each neighbour changes (:mod:`~pymc_edp.core.replace`: the
replacement values); :mod:`~pymc_edp.core.loglik` turns a ``log_likelihood`` group into
neighbour log ratios and Pareto-smoothed log-weights; :mod:`~pymc_edp.core.reweight`
reweights a chunk of neighbours and prunes those that cannot set epsilon;
:mod:`~pymc_edp.core.select` chooses the posterior variables an audit bins.
"""
