"""Private helpers shared by the modules of :mod:`pymc_edp.risk`."""

from __future__ import annotations

import numpy as np


def as_float_or_array(a: np.ndarray) -> float | np.ndarray:
    """A 0-d result as a Python float, anything else unchanged."""
    return float(a) if np.ndim(a) == 0 else a


def check_int_scalar(value, name: str, minimum: int) -> int:
    """``value`` as an int, or a ``ValueError`` unless it is an integer >= ``minimum``."""
    if isinstance(value, bool) or int(value) != value or value < minimum:
        raise ValueError(f"`{name}` must be an integer >= {minimum}, got {value!r}.")
    return int(value)
