"""Infrastructure, not statistics: where tasks run and where compiled kernels are cached.

:mod:`~pymc_edp.runtime.parallel` runs independent tasks serially, on a process pool or on
dask (executors, ``map_tasks``, progress bars); :mod:`~pymc_edp.runtime.jit` sends the numba
kernels' compiled code to the user's cache folder. The lowest layer: nothing here imports
another module of :mod:`pymc_edp`, and :mod:`pymc_edp.base` installs the cache locator
before its kernels are compiled.
"""
