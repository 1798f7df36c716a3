"""Array kernels: NumPy and numba only, the sample axis last.

Nothing in :mod:`pymc_edp.base` imports PyMC, ArviZ or xarray, or any other part of
:mod:`pymc_edp`: :mod:`~pymc_edp.base.binning` (equal-probability bins and epsilon),
:mod:`~pymc_edp.base.psis` (Pareto smoothing), :mod:`~pymc_edp.base.mcse` (effective
sample size and the Monte-Carlo error of epsilon), :mod:`~pymc_edp.base.hockey`
(hockey-stick divergences), :mod:`~pymc_edp.base.parallel` (executors and progress bars).
"""
