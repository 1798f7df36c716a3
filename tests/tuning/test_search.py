"""Tests of the noisy root finder (:mod:`pymc_edp.tuning.search`)."""

import math

import pytest

from pymc_edp.tuning.search import Search as _Search
from pymc_edp.tuning.search import Trial as _Trial
from pymc_edp.tuning.search import find_bracket as _find_bracket
from pymc_edp.tuning.search import monotone as _monotone
from pymc_edp.tuning.search import root as _root


def _fake_search(fn, target, *, mcse=1e-3, rtol=0.01):
    calls = []

    def evaluate(x, stage):
        calls.append(x)
        eps = fn(math.exp(x))
        return _Trial(x, eps, mcse * max(eps, 1e-3), 0.0, stage)

    return _Search(evaluate, target, rtol), calls


@pytest.mark.parametrize("sign", [1, -1])
def test_search_finds_root_of_monotone_relation(sign):
    # epsilon = 0.6 v / (v + 0.2) (a scale, sign 1) or in 1 / v (a concentration, sign -1)
    def fn(v):
        v = v if sign > 0 else 1.0 / v
        return 0.6 * v / (v + 0.2)

    search, calls = _fake_search(fn, 0.3)
    found = _find_bracket(search, math.log(1.7), 0, 4.0, 25)
    _root(search, *found, xtol=1e-3, max_evaluations=25)
    assert search.stopped == "tolerance"
    best = min(search.trials, key=lambda t: abs(t.epsilon - 0.3))
    # the root is v = 0.2 (or 5 for the concentration); rtol = 1% on epsilon maps to about
    # 2% on v at this slope (d log eps / d log v = 0.5)
    root = 0.2 if sign > 0 else 5.0
    assert abs(math.exp(best.x) / root - 1) < 0.025
    assert len(calls) <= 12


def test_search_raises_when_target_out_of_reach():
    search, _ = _fake_search(lambda v: 0.6 * v / (v + 0.2), 0.9)
    with pytest.raises(RuntimeError, match="levels off"):
        _find_bracket(search, math.log(1.7), 0, 4.0, 25)


def test_search_stops_at_noise_and_interpolates():
    # an MC error of 60% of epsilon: the ends of the bracket (0.2 and 0.4) are within it
    search, _ = _fake_search(lambda v: 0.6 * v / (v + 0.2), 0.3, mcse=0.6)
    a, b = search(math.log(0.1), "bracket"), search(math.log(0.4), "bracket")
    _root(search, a, b, xtol=1e-3, max_evaluations=25)
    assert search.stopped == "noise"
    assert len(search.trials) == 2


def test_monotonicity_check():
    def t(v, e):
        return _Trial(math.log(v), e, 0.01, 0.0, "root")

    ok, _ = _monotone([t(0.1, 0.2), t(0.2, 0.3), t(0.4, 0.295)], 1)  # dip within 2 MCSE
    assert ok
    ok, msg = _monotone([t(0.1, 0.2), t(0.2, 0.4), t(0.4, 0.3)], 1)
    assert not ok and "not monotone" in msg


@pytest.mark.parametrize(
    "fn",
    [
        lambda v: 0.5 + 1e-4 * math.log(v),  # a prior mean: epsilon barely moves
        lambda v: 0.5 + 0.05 * math.log(v / 10.0) ** 2 / (1 + math.log(v / 10.0) ** 2),  # a U
    ],
    ids=["flat", "not-monotone"],
)
def test_a_hyperparameter_that_does_not_set_epsilon_is_named_not_a_wider_bracket(fn):
    # issue 32: tuning a prior mean advised 'Pass bracket=(low, high) or a larger
    # max_evaluations', which cannot help
    search, _ = _fake_search(fn, 0.3)
    with pytest.raises(RuntimeError) as err:
        _find_bracket(search, math.log(10.0), 0, 4.0, 12)
    message = str(err.value)
    assert "does not control how far one record moves the posterior" in message
    assert "Tune a scale or strength instead" in message
    assert "Pass bracket=" not in message


def test_a_slow_scale_out_of_budget_still_asks_for_more_evaluations():
    # epsilon follows the value (a scale), the budget is just too small: the old advice
    search, _ = _fake_search(lambda v: 0.6 * v / (v + 0.2), 0.05)
    with pytest.raises(RuntimeError, match="Pass bracket=.* or a larger max_evaluations"):
        _find_bracket(search, math.log(100.0), 1, 4.0, 3)
