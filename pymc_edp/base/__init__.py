"""Array kernels: NumPy and numba only, the sample axis last.

Nothing in :mod:`pymc_edp.base` imports PyMC, ArviZ, xarray or a module of :mod:`pymc_edp`
outside ``base``: :mod:`~pymc_edp.base.binning` (equal-probability bins and epsilon),
:mod:`~pymc_edp.base.psis` (Pareto smoothing), :mod:`~pymc_edp.base.mcse` (effective
sample size and the Monte-Carlo error of epsilon), :mod:`~pymc_edp.base.hockey`
(hockey-stick divergences, total risk, the smallest epsilon for a delta),
:mod:`~pymc_edp.base.limits` (when an estimate is a lower bound),
:mod:`~pymc_edp.base.pld` (privacy loss distributions: discretisation, FFT composition),
:mod:`~pymc_edp.base.jit` (where the kernels' compiled code is cached),
:mod:`~pymc_edp.base.kde` (kernel density estimates), :mod:`~pymc_edp.base.parallel`
(executors and progress bars), :mod:`~pymc_edp.base.common` (shared names and sizes) and
:mod:`~pymc_edp.base.validate` (argument checks).
"""

from pymc_edp.base import jit as _jit

# before any kernel module is imported: numba's caches go to the user's cache folder
_jit.install()
