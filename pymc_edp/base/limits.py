"""Where an epsilon estimate stops resolving the truth: limit codes, their reasons and remedies.

An estimate of ``|log P'(b) - log P(b)|`` at the bin that sets it is *at a limit* when
something other than the data caps it:

``smoothing``
    Smoothing moved it: ``log((S m + alpha) / (c + alpha)) >= -log((c + alpha) / alpha)``.
``few_draws``
    The bin's mass rests on under :data:`MIN_BIN_DRAWS` draws' worth of weight (Kish's
    ``(sum w)^2 / sum w^2``).
``empty_bin``
    No weight of the neighbour falls in a bin (infinite, or set by smoothing).
``unverified``
    Reweighting proved unreliable and the verification budget ran out before its refit.
``not_evaluated``
    No estimate: not refitted (``max_refits``) or the refit failed, without a factorised
    likelihood.

An estimate at a limit is a lower bound. The codes are ``int8`` with CF ``flag_values``
and ``flag_meanings``.
"""

from __future__ import annotations

import numpy as np

__all__ = [
    "EMPTY_BIN",
    "FEW_DRAWS",
    "LOG_RATIO_RESOLUTION",
    "MEANINGS",
    "MIN_BIN_DRAWS",
    "NONE",
    "NOT_EVALUATED",
    "REASONS",
    "REMEDIES",
    "SMOOTHING",
    "SMOOTHING_RTOL",
    "UNVERIFIED",
    "classify",
    "flag_attrs",
    "worst_code",
]

NONE, SMOOTHING, FEW_DRAWS, EMPTY_BIN, UNVERIFIED, NOT_EVALUATED = 0, 1, 2, 3, 4, 5
MEANINGS = ("none", "smoothing", "few_draws", "empty_bin", "unverified", "not_evaluated")

#: The bin that sets an estimate must hold at least this many draws' worth of the
#: neighbour's weight; below it the bin's mass is not resolved and the value is a lower bound.
MIN_BIN_DRAWS = 5.0
#: Smoothing is said to bind when it lowers an estimate by more than this fraction.
SMOOTHING_RTOL = 0.01
#: What float64 resolves of a log ratio: ``sqrt(machine epsilon)``, about 1.5e-8. Log
#: densities are computed to a relative ``2.2e-16``, so a log ratio formed from terms of up to
#: ``1 / sqrt(eps)`` (6.7e7) nats carries rounding below it. Log ratios that vary by less are
#: constant (weights ``e^(+-1.5e-8)``, an epsilon below it whatever the weighting), and two
#: epsilon estimates closer than it agree.
LOG_RATIO_RESOLUTION = float(np.sqrt(np.finfo(float).eps))

REASONS = {
    SMOOTHING: "the smoothing constant, not the data, sets it",
    FEW_DRAWS: f"its bin holds under {MIN_BIN_DRAWS:g} draws' worth of the neighbour's weight",
    EMPTY_BIN: "a bin receives no draw of the neighbour posterior",
    UNVERIFIED: "reweighting proved unreliable for this model and it was not refitted",
    NOT_EVALUATED: "it has no estimate: without a factorised likelihood only a refit gives "
    "one, and it was not refitted (or its refit failed)",
}
REMEDIES = {
    SMOOTHING: "audit with smoothing=None (weighted bins are never empty)",
    FEW_DRAWS: "draw more samples, or refit it (method='auto' with model=)",
    EMPTY_BIN: "refit it with the pooled estimator (RefitOptions(estimator='pooled')), or, "
    "where a coupled likelihood's refit counts its own draws, with more draws "
    "(RefitOptions(draws=...))",
    UNVERIFIED: "raise VerifyOptions(max_refits=...) or time_budget, or use method='refit'",
    NOT_EVALUATED: "raise RefitOptions(max_refits=...), or rerun with the same checkpoint to "
    "refit only what is missing",
}


def classify(
    eps: np.ndarray,
    eps_unsmoothed: np.ndarray,
    bin_draws: np.ndarray,
    smoothing: float,
) -> np.ndarray:
    """Limit code of every estimate, from the fields of an ``EpsilonEstimate``.

    :data:`EMPTY_BIN` where ``eps_unsmoothed`` is infinite, else :data:`SMOOTHING` where
    ``smoothing`` lowered it by more than :data:`SMOOTHING_RTOL`, else :data:`FEW_DRAWS`
    where ``bin_draws < MIN_BIN_DRAWS``, else :data:`NONE` (also for a NaN ``eps``).

    Examples
    --------
    >>> from pymc_edp.base.limits import MEANINGS, classify
    >>> codes = classify(np.array([9.9, 1.0, 2.0, 0.3]), np.array([np.inf, 1.3, 2.0, 0.3]),
    ...                  np.array([0.0, 40.0, 2.5, 200.0]), smoothing=0.01)
    >>> [MEANINGS[c] for c in codes]
    ['empty_bin', 'smoothing', 'few_draws', 'none']
    """
    eps = np.asarray(eps, dtype=float)
    e0 = np.asarray(eps_unsmoothed, dtype=float)
    draws = np.asarray(bin_draws, dtype=float)
    out = np.zeros(eps.shape, dtype=np.int8)
    known = ~np.isnan(eps)
    few = known & (draws < MIN_BIN_DRAWS)
    out[few] = FEW_DRAWS
    if smoothing > 0:
        lowered = known & np.isfinite(e0) & (e0 - eps > SMOOTHING_RTOL * e0)
        out[lowered] = SMOOTHING
    out[known & np.isposinf(e0)] = EMPTY_BIN
    return out


def worst_code(codes: np.ndarray, eps: np.ndarray, axis: int = -1) -> np.ndarray:
    """The code of the largest limited estimate along ``axis`` (``NONE`` where none is).

    Examples
    --------
    >>> from pymc_edp.base.limits import worst_code
    >>> worst_code(np.array([[0, 1, 2], [0, 0, 0]]), np.array([[5.0, 1.0, 3.0], [1, 2, 3]]))
    array([2, 0], dtype=int8)
    """
    codes = np.asarray(codes)
    eps = np.nan_to_num(np.asarray(eps, dtype=float), nan=-np.inf)
    score = np.where(codes > 0, eps, -np.inf)
    pick = np.argmax(score, axis=axis)
    picked = np.take_along_axis(codes, np.expand_dims(pick, axis), axis=axis)
    out = np.squeeze(picked, axis=axis).astype(np.int8)
    return np.where(np.any(codes > 0, axis=axis), out, NONE).astype(np.int8)


def flag_attrs(description: str, meanings: tuple[str, ...] = MEANINGS) -> dict:
    """CF attributes of a variable holding the codes ``0, 1, ...`` of ``meanings``."""
    return {
        "flag_values": np.arange(len(meanings), dtype=np.int8),
        "flag_meanings": " ".join(meanings),
        "long_name": description,
    }
