"""Argument checks with messages that say what is wrong and how to fix it."""

from __future__ import annotations

import dataclasses
import numbers
from collections.abc import Mapping, Sequence

import numpy as np

__all__ = [
    "as_options",
    "check_choice",
    "check_delta",
    "check_int",
    "check_probability",
    "check_real",
]


def check_choice(value, name: str, choices: Sequence[str]) -> str:
    """``value`` if it is one of ``choices``, else a :class:`ValueError` naming them."""
    if not isinstance(value, str) or value not in choices:
        raise ValueError(f"{name} must be one of {tuple(choices)}, got {value!r}")
    return value


def check_int(value, name: str, minimum: int | None = None, *, allow_none: bool = False):
    """``value`` as an ``int`` (``>= minimum``); booleans and non-integers are refused."""
    if value is None and allow_none:
        return None
    integral = isinstance(value, numbers.Integral) or (
        isinstance(value, numbers.Real) and float(value).is_integer()
    )
    if isinstance(value, bool) or not integral or (minimum is not None and value < minimum):
        bound = "" if minimum is None else f" >= {minimum}"
        raise ValueError(f"{name} must be an integer{bound}, got {value!r}")
    return int(value)


def check_real(
    value,
    name: str,
    *,
    minimum: float | None = None,
    positive: bool = False,
    allow_inf: bool = False,
) -> float:
    """``value`` as a ``float``: finite (unless ``allow_inf``), ``>= minimum``, ``> 0``."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TypeError(f"{name} must be a number, got {type(value).__name__} {value!r}")
    v = float(value)
    bad = np.isnan(v) or (not allow_inf and not np.isfinite(v))
    bad = bad or (minimum is not None and v < minimum) or (positive and not v > 0)
    if bad:
        what = "finite " if not allow_inf else ""
        bound = " > 0" if positive else f" >= {minimum}" if minimum is not None else ""
        raise ValueError(f"{name} must be a {what}number{bound}, got {value!r}")
    return v


def check_probability(value, name: str = "prob") -> float:
    """``value`` as a ``float`` in the open interval (0, 1)."""
    v = check_real(value, name)
    if not 0 < v < 1:
        raise ValueError(f"{name} must be in (0, 1), got {value!r}")
    return v


def check_delta(value, name: str = "delta") -> float:
    """``value`` as a ``float`` in ``[0, 1)`` (``delta >= 1`` holds for any epsilon).

    Examples
    --------
    >>> from pymc_edp.base.validate import check_delta
    >>> check_delta(0), check_delta(1e-5)
    (0.0, 1e-05)
    """
    v = check_real(value, name)
    if not 0 <= v < 1:
        why = (
            f"every epsilon holds at {name} >= 1"
            if v >= 1
            else f"{name} is a probability (of the guarantee failing)"
        )
        raise ValueError(f"{name} must be in [0, 1), got {value!r}: {why}; give e.g. 1e-5")
    return v


def as_options(cls, value, argument: str):
    """``value`` as an instance of the frozen options dataclass ``cls``.

    None gives the defaults, a dict its fields (unknown keys named in the error, and where
    they moved for those in ``cls.MOVED``); anything but an instance is a :class:`TypeError`.

    Examples
    --------
    >>> import dataclasses
    >>> from pymc_edp.base.validate import as_options
    >>> @dataclasses.dataclass(frozen=True)
    ... class Opts:
    ...     draws: int = 10
    >>> as_options(Opts, {"draws": 3}, "opts")
    Opts(draws=3)
    >>> as_options(Opts, {"draw": 3}, "opts")
    Traceback (most recent call last):
        ...
    TypeError: unknown opts option(s) ['draw']; Opts takes ['draws']
    """
    if value is None:
        return cls()
    if isinstance(value, cls):
        return value
    if isinstance(value, Mapping):
        known = {f.name for f in dataclasses.fields(cls)}
        unknown = sorted(set(value) - known)
        moved = getattr(cls, "MOVED", {})
        gone = [k for k in unknown if k in moved]
        if gone:
            raise TypeError("; ".join(f"{argument}={{{k!r}: ...}} {moved[k]}" for k in gone))
        if unknown:
            raise TypeError(
                f"unknown {argument} option(s) {unknown}; {cls.__name__} takes {sorted(known)}"
            )
        return cls(**value)
    raise TypeError(
        f"{argument}= takes a {cls.__name__} or a dict of its fields, got {type(value).__name__}"
    )
