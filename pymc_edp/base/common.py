"""Names, warning class and sizes shared by every layer of :mod:`pymc_edp`."""

from __future__ import annotations

import math
import numbers
from importlib.metadata import PackageNotFoundError, version

import numpy as np

__all__ = [
    "CHUNK_BYTES",
    "COUNT_SMOOTHING",
    "MEMORY_BUDGET",
    "MIN_DRAWS_PER_BIN",
    "NEIGHBOUR_DIM",
    "PARAMETER_DIM",
    "SAMPLE_DIM",
    "TRIAL_DIM",
    "WEIGHT_INDEX",
    "EDPWarning",
    "chunk_slices",
    "installed_major",
    "parse_bytes",
    "resolve_seed",
    "rows_per_chunk",
]

NEIGHBOUR_DIM = "neighbour"
PARAMETER_DIM = "parameter"
SAMPLE_DIM = "sample"
TRIAL_DIM = "trial"
#: Coordinate of a result's kept ``log_weights`` giving each row's position in ``pointwise``.
WEIGHT_INDEX = "neighbour_index"

#: Additive smoothing of count-based bin probabilities, in draws (Charest & Han's alpha).
COUNT_SMOOTHING = 0.01

#: Fewer draws per bin than this leave the bin probabilities mostly noise.
MIN_DRAWS_PER_BIN = 10
#: Working memory of one chunk of ``(rows, draws)`` float64 arrays.
CHUNK_BYTES = 32 * 2**20
#: Default working-memory budget of the audit's chunk loop over records (``memory=``).
MEMORY_BUDGET = 512 * 2**20
_UNITS = {
    "": 1,
    "b": 1,
    "kb": 10**3,
    "mb": 10**6,
    "gb": 10**9,
    "tb": 10**12,
    "kib": 2**10,
    "mib": 2**20,
    "gib": 2**30,
    "tib": 2**40,
}


def parse_bytes(value, name: str = "memory") -> int:
    """A number of bytes from an int or a string such as ``"512MiB"`` or ``"2 GB"``.

    Examples
    --------
    >>> from pymc_edp.base.common import parse_bytes
    >>> parse_bytes("512MiB"), parse_bytes("2 GB"), parse_bytes(1024)
    (536870912, 2000000000, 1024)
    """
    not_a_size = ValueError(
        f"{name}={value!r} is not a size: give bytes or a string like '512MiB', '2GB' "
        "(units: B, kB, MB, GB, TB, KiB, MiB, GiB, TiB)"
    )
    if isinstance(value, numbers.Real) and not isinstance(value, bool):
        amount = value
    elif isinstance(value, str):
        text = value.strip().lower().replace(" ", "")
        digits = text.rstrip("abcdefghijklmnopqrstuvwxyz")
        try:
            amount = float(digits) * _UNITS[text[len(digits) :]]
        except (KeyError, ValueError):
            raise not_a_size from None
    else:
        raise TypeError(f"{name} must be a number of bytes or a string like '1GiB'")
    if not math.isfinite(amount):
        raise not_a_size
    out = int(amount)
    if out <= 0:
        raise ValueError(f"{name} must be positive (at least one byte), got {value!r}")
    return out


class EDPWarning(UserWarning):
    """A diagnostic that makes an epsilon less trustworthy (bad k-hat, few draws, ...).

    Examples
    --------
    Record, silence or raise them with :mod:`warnings`:

    >>> import warnings
    >>> issubclass(edp.EDPWarning, UserWarning)
    True
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     warnings.warn("k-hat above the threshold", edp.EDPWarning)
    >>> [w.category.__name__ for w in caught]
    ['EDPWarning']
    """


def installed_major(package: str) -> int:
    """Major version of the installed ``package`` (0 when it is absent), without importing it.

    Examples
    --------
    >>> from pymc_edp.base.common import installed_major
    >>> installed_major("numpy") >= 1, installed_major("no-such-package-here")
    (True, 0)
    """
    try:
        return int(version(package).split(".")[0])
    except (PackageNotFoundError, ValueError):  # pragma: no cover - broken installs
        return 0


def rows_per_chunk(n_samples: int, factor: int = 1) -> int:
    """Rows of ``n_samples`` float64 values (times ``factor`` arrays) in :data:`CHUNK_BYTES`."""
    return max(1, CHUNK_BYTES // (8 * max(1, int(n_samples)) * max(1, int(factor))))


def chunk_slices(n: int, n_samples: int, factor: int = 1):
    """Slices of ``range(n)`` of :func:`rows_per_chunk` rows each."""
    size = rows_per_chunk(n_samples, factor)
    for start in range(0, n, size):
        yield slice(start, min(start + size, n))


def resolve_seed(random_seed) -> int:
    """The integer seed a run actually uses, so that it can be recorded and repeated.

    ``None`` draws fresh entropy; a :class:`numpy.random.Generator` (or ``RandomState``)
    gives the next integer it draws.

    Examples
    --------
    >>> from pymc_edp.base.common import resolve_seed
    >>> resolve_seed(7)
    7
    >>> resolve_seed(np.random.default_rng(0)) == resolve_seed(np.random.default_rng(0))
    True
    """
    if random_seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint32)[0])
    if isinstance(random_seed, np.random.Generator):
        return int(random_seed.integers(2**31 - 1))
    if isinstance(random_seed, np.random.RandomState):
        return int(random_seed.randint(2**31 - 1))
    if isinstance(random_seed, bool) or not isinstance(random_seed, numbers.Integral):
        raise TypeError(
            "random_seed must be None, an integer or a numpy.random.Generator, got "
            f"{type(random_seed).__name__} {random_seed!r}"
        )
    if random_seed < 0:
        raise ValueError(f"random_seed must be >= 0, got {random_seed!r}")
    return int(random_seed)
