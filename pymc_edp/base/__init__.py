"""Array kernels: NumPy and numba only, the sample axis last.

Nothing in :mod:`pymc_edp.base` imports PyMC, ArviZ, xarray or a module of :mod:`pymc_edp`
outside ``base`` but :mod:`pymc_edp.runtime` (the numba cache locator, installed here); each
module's docstring says what it holds.
"""

from pymc_edp.runtime import jit as _jit

# before any kernel module is imported: numba's caches go to the user's cache folder
_jit.install()
