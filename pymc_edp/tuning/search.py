"""A root finder for a noisy monotone function: where epsilon meets its target.

It works on ``log epsilon - log target`` against ``log value``: brackets the target by
geometric steps, runs Brent's method until an evaluation meets the tolerance or the noise
hides the bracket's ends, and answers with a weighted line through the trials near the target.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass

import numpy as np

from pymc_edp.base.validate import as_options, check_choice, check_int, check_real

__all__ = ["SearchOptions"]

DIRECTIONS = ("auto", "increasing", "decreasing")


@dataclass(frozen=True)
class SearchOptions:
    """How :func:`~pymc_edp.tune_prior` searches the hyperparameter.

    Parameters
    ----------
    direction : {"auto", "increasing", "decreasing"}, default "auto"
        How epsilon moves with the hyperparameter: ``"increasing"`` for a scale,
        ``"decreasing"`` for a concentration or precision; ``"auto"`` finds out.
    rtol : float, default 0.01
        Stop when an evaluation is within ``rtol * target`` (and its Monte-Carlo error too).
    xtol : float, default 1e-3
        Tolerance of Brent's method on the log value.
    step : float, default 4
        Factor by which the value is multiplied or divided while bracketing.
    max_evaluations : int, default 25
        Posteriors sampled during the search at most.

    Examples
    --------
    >>> edp.SearchOptions(rtol=0.02).max_evaluations
    25
    """

    direction: str = "auto"
    rtol: float = 0.01
    xtol: float = 1e-3
    step: float = 4.0
    max_evaluations: int = 25

    def __post_init__(self):
        check_choice(self.direction, "direction", DIRECTIONS)
        check_real(self.rtol, "rtol", positive=True)
        check_real(self.xtol, "xtol", positive=True)
        if not check_real(self.step, "step") > 1:
            raise ValueError(f"step must be > 1, got {self.step!r}")
        check_int(self.max_evaluations, "max_evaluations", 2)

    @classmethod
    def coerce(cls, value: SearchOptions | Mapping | None) -> SearchOptions:
        """``value`` as options (None: the defaults; a dict: the fields)."""
        return as_options(cls, value, "search")


@dataclass
class Trial:
    """One evaluation: log value ``x``, the estimate and its Monte-Carlo error."""

    x: float
    epsilon: float
    mcse: float
    max_khat: float
    stage: str
    idata: object = None


class _Stop(Exception):
    """The search has converged (raised inside the root finder)."""


class Search:
    """Evaluations of log epsilon against log value, cached, with the bracket logic."""

    def __init__(self, evaluate: Callable[[float, str], Trial], target: float, rtol: float):
        self.evaluate_fn, self.target, self.rtol = evaluate, target, rtol
        self.trials: list[Trial] = []
        self.stopped = ""

    def __call__(self, x: float, stage: str) -> Trial:
        """The trial at ``x``, evaluated once."""
        for t in self.trials:
            if t.x == x:
                return t
        t = self.evaluate_fn(x, stage)
        self.trials.append(t)
        return t

    def g(self, t: Trial) -> float:
        """``log epsilon - log target``, the function whose root is sought."""
        return math.log(max(t.epsilon, 1e-300) / self.target)

    def met(self, t: Trial) -> bool:
        """Whether ``t`` is within ``rtol`` of the target."""
        return abs(t.epsilon - self.target) <= self.rtol * self.target

    def bracket(self) -> tuple[Trial, Trial] | None:
        """The narrowest adjacent pair of trials whose epsilons straddle the target."""
        pts = sorted(self.trials, key=lambda t: t.x)
        best = None
        for a, b in itertools.pairwise(pts):
            if (a.epsilon - self.target) * (b.epsilon - self.target) <= 0:
                if best is None or b.x - a.x < best[1].x - best[0].x:
                    best = (a, b)
        return best

    def resolved(self, a: Trial, b: Trial) -> bool:
        """Whether the epsilons at ``a`` and ``b`` differ by more than twice their MC error."""
        return abs(a.epsilon - b.epsilon) > 2 * max(math.hypot(a.mcse, b.mcse), 1e-12)


def trend(trials: list[Trial]) -> int:
    """+1 / -1 if epsilon resolvably rises / falls from the lowest to the highest value."""
    lo = min(trials, key=lambda t: t.x)
    hi = max(trials, key=lambda t: t.x)
    if lo is hi or abs(hi.epsilon - lo.epsilon) <= 2 * max(hi.mcse, lo.mcse):
        return 0
    return 1 if hi.epsilon > lo.epsilon else -1


def find_bracket(
    search: Search, x0: float, direction: int, step: float, max_evaluations: int
) -> tuple[Trial, Trial] | Trial:
    """Step from ``x0`` by ``log(step)`` until epsilon crosses the target."""
    t0 = search(x0, "initial")
    if search.met(t0):
        return t0
    h = math.log(step)
    while True:
        br = search.bracket()
        if br is not None:
            return br
        if len(search.trials) >= max_evaluations:
            break
        xs = [t.x for t in search.trials]
        lo, hi = min(xs), max(xs)
        d = direction or trend(search.trials)
        above = search.trials[0].epsilon > search.target
        if d == 0:
            # direction not yet resolvable (a plateau): widen on both sides in turn
            n_up = sum(t.x > x0 for t in search.trials)
            n_down = sum(t.x < x0 for t in search.trials)
            x_new = hi + h if n_up <= n_down else lo - h
        else:
            go_up = (d > 0) != above
            x_new = hi + h if go_up else lo - h
            # a plateau in the direction of travel means the target is out of reach: two
            # steps beyond the start on that side changed epsilon by less than its MC error
            side = sorted(
                (t for t in search.trials if (t.x >= x0 if go_up else t.x <= x0)),
                key=lambda t: t.x,
                reverse=not go_up,
            )
            if len(side) >= 3 and not search.resolved(side[-3], side[-1]):
                last = side[-1]
                where = "above" if above else "below"
                why = uncontrolled(search.trials, search.target) or (
                    " (with a very weak prior the likelihood alone sets epsilon; with a very "
                    "strong one the Monte-Carlo noise floor does)."
                )
                raise RuntimeError(
                    f"epsilon levels off at about {last.epsilon:.4g} (+- {last.mcse:.2g}) as "
                    f"the hyperparameter goes to {math.exp(last.x):.4g}, still {where} the "
                    f"target {search.target:.4g}: the target cannot be reached by this "
                    f"hyperparameter{why}"
                )
        search(x_new, "bracket")
    pts = sorted(search.trials, key=lambda t: t.x)
    advice = uncontrolled(search.trials, search.target) or (
        ". Pass bracket=(low, high) or a larger max_evaluations."
    )
    raise RuntimeError(
        f"could not bracket the target epsilon {search.target:.4g} in {max_evaluations} "
        f"evaluations: over values {math.exp(pts[0].x):.4g} .. {math.exp(pts[-1].x):.4g} "
        f"epsilon ranged {min(t.epsilon for t in pts):.4g} .. "
        f"{max(t.epsilon for t in pts):.4g}{advice}"
    )


#: Advice when the tuned hyperparameter does not set how private the posterior is.
_NOT_A_STRENGTH = (
    ": this hyperparameter does not control how far one record moves the posterior (a "
    "prior mean or location shifts the posterior without making it less sensitive), so a "
    "wider bracket or more evaluations cannot help. Tune a scale or strength instead: a "
    "prior standard deviation, a concentration or a precision (as a pm.Data "
    "hyperparameter=)."
)


def uncontrolled(trials: list[Trial], target: float) -> str:
    """:data:`_NOT_A_STRENGTH` with the evidence, or "" when epsilon follows the value.

    It does not when, over three or more values spanning a factor 10 or more, epsilon is flat
    (extremes within twice their MC error or, over a factor 1000, moved by less than a tenth
    of its distance to the target) or not monotone either way.
    """
    if len(trials) < 3:
        return ""
    xs = [t.x for t in trials]
    if max(xs) - min(xs) < math.log(10.0):
        return ""
    lo = min(trials, key=lambda t: t.epsilon)
    hi = max(trials, key=lambda t: t.epsilon)
    nearest = min(abs(t.epsilon - target) for t in trials)
    spread = hi.epsilon - lo.epsilon
    wide = max(xs) - min(xs) >= math.log(1000.0)
    if spread <= 2 * math.hypot(lo.mcse, hi.mcse) or (wide and spread < 0.1 * nearest):
        mid = 0.5 * (lo.epsilon + hi.epsilon)
        return f", flat at about {mid:.4g} (+- {max(spread / 2, lo.mcse):.2g})" + _NOT_A_STRENGTH
    if not monotone(trials, 1)[0] and not monotone(trials, -1)[0]:
        return ", and not monotone in it" + _NOT_A_STRENGTH
    return ""


def root(search: Search, a: Trial, b: Trial, xtol: float, max_evaluations: int):
    """Brent's method on ``log eps - log target`` in log value, stopped on tolerance/noise."""
    from scipy.optimize import brentq

    def f(x: float) -> float:
        if len(search.trials) >= max_evaluations:
            search.stopped = "maxiter"
            raise _Stop
        t = search(x, "root")
        if search.met(t):
            search.stopped = "tolerance"
            raise _Stop
        br = search.bracket()
        if br is not None and not search.resolved(*br):
            search.stopped = "noise"
            raise _Stop
        return search.g(t)

    if search.met(a) or search.met(b):
        search.stopped = "tolerance"
        return
    if not search.resolved(a, b):
        search.stopped = "noise"
        return
    try:
        brentq(f, a.x, b.x, xtol=xtol, rtol=4 * np.finfo(float).eps, maxiter=max_evaluations)
        search.stopped = "xtol"
    except _Stop:
        pass


def answer(search: Search) -> tuple[float, Trial | None]:
    """``(log value, its trial or None)``: a trial within tolerance, else a fitted value.

    A trial meets the target if it and its MC error are within ``rtol``. Otherwise a weighted
    (``(epsilon / mcse)^2``) line of ``log epsilon`` on ``log value`` through the trials
    within a factor 2 of the target is solved for it, averaging their noise; the fallback is
    the log-linear interpolation across the final bracket.
    """
    met = [t for t in search.trials if search.met(t) and t.mcse <= search.rtol * search.target]
    if met:
        best = min(met, key=lambda t: abs(search.g(t)))
        return best.x, best
    br = search.bracket()
    if br is None:  # the untuned value already met the target (within noise)
        best = min(search.trials, key=lambda t: abs(search.g(t)))
        return best.x, best
    a, b = br
    ga, gb = search.g(a), search.g(b)
    x = a.x if ga == gb else a.x + (b.x - a.x) * ga / (ga - gb)
    near = [t for t in search.trials if abs(search.g(t)) < math.log(2.0) and t.epsilon > 0]
    if len({t.x for t in near}) >= 2:
        xs = np.array([t.x for t in near])
        gs = np.array([search.g(t) for t in near])
        w = np.array([(t.epsilon / max(t.mcse, 1e-12 * t.epsilon)) ** 2 for t in near])
        slope, icept = np.polyfit(xs, gs, 1, w=np.sqrt(w))
        rising = np.sign(gb - ga) * np.sign(b.x - a.x)
        if slope != 0 and np.sign(slope) == rising:
            x_fit = -icept / slope
            if min(a.x, b.x) <= x_fit <= max(a.x, b.x):
                x = float(x_fit)
    return x, None


def run(search: Search, x0: float, bracket, sopts: SearchOptions, sign: int):
    """Bracket the target and find the root; the answer's log value and its trial."""
    if bracket is not None:
        lo, hi = bracket
        t0 = search(x0, "initial")
        ta, tb = search(math.log(lo), "bracket"), search(math.log(hi), "bracket")
        target = search.target
        if search.met(t0) and lo <= math.exp(x0) <= hi:
            found = t0
        elif (ta.epsilon - target) * (tb.epsilon - target) > 0:
            raise RuntimeError(
                f"bracket {bracket} does not straddle the target {target:.4g}: "
                f"epsilon is {ta.epsilon:.4g} at {lo:.4g} and {tb.epsilon:.4g} at {hi:.4g}"
                + uncontrolled(search.trials, target)
            )
        else:
            found = search.bracket()
    else:
        found = find_bracket(search, x0, sign, sopts.step, sopts.max_evaluations)
    if isinstance(found, Trial):
        search.stopped = "tolerance"
    else:
        root(search, *found, xtol=sopts.xtol, max_evaluations=sopts.max_evaluations)
    x_best, t_best = answer(search)
    if t_best is None:
        t_best = search(x_best, "final")
    return x_best, t_best


def monotone(trials: list[Trial], sign: int) -> tuple[bool, str]:
    """Whether the trials move in direction ``sign`` beyond their error, and else why not."""
    pts = sorted(trials, key=lambda t: t.x)
    bad = []
    for a, b in itertools.pairwise(pts):
        if sign * (b.epsilon - a.epsilon) < -2 * max(a.mcse, b.mcse):
            bad.append((math.exp(a.x), a.epsilon, math.exp(b.x), b.epsilon))
    if not bad:
        return True, ""
    v0, e0, v1, e1 = bad[0]
    lo, hi = math.exp(pts[0].x), math.exp(pts[-1].x)
    return False, (
        f"epsilon is not monotone in the hyperparameter over [{lo:.4g}, {hi:.4g}] beyond its "
        f"Monte-Carlo error (e.g. {e0:.4g} at {v0:.4g} but {e1:.4g} at {v1:.4g}); the target "
        "may be met at several values and the root found need not be the one wanted. Plot "
        "res.trials or narrow bracket=."
    )
