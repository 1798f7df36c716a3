"""Private helpers shared by the modules of :mod:`pymc_edp.risk`."""

from __future__ import annotations

import numpy as np


def as_float_or_array(a: np.ndarray) -> float | np.ndarray:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(a) if np.ndim(a) == 0 else a
