"""The audit's PyMC-free core: neighbours, log ratios, reweighting and variable selection.

Nothing in :mod:`pymc_edp.core` imports PyMC, PyTensor or ArviZ, or a module of
:mod:`pymc_edp` above ``base``: it works on xarray Datasets and NumPy arrays.
"""
