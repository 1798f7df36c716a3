"""Tests of pymc_edp.base.validate: argument checks and their messages."""

import dataclasses

import numpy as np
import pytest

from pymc_edp.base.validate import (
    as_options,
    check_choice,
    check_delta,
    check_int,
    check_probability,
    check_real,
)


def test_check_choice():
    assert check_choice("psis", "method", ("psis", "refit")) == "psis"
    with pytest.raises(ValueError, match=r"method must be one of \('psis', 'refit'\), got 'PSIS'"):
        check_choice("PSIS", "method", ["psis", "refit"])
    with pytest.raises(ValueError, match="got None"):
        check_choice(None, "method", ("psis",))


@pytest.mark.parametrize(("value", "expected"), [(3, 3), (np.int32(4), 4), (5.0, 5), (0, 0)])
def test_check_int_accepts_whole_numbers(value, expected):
    out = check_int(value, "bins", 0)
    assert out == expected and type(out) is int


@pytest.mark.parametrize("value", [2.5, True, "3", None, np.nan])
def test_check_int_refuses_non_integers(value):
    with pytest.raises(ValueError, match=rf"bins must be an integer, got {value!r}"):
        check_int(value, "bins")


def test_check_int_minimum_and_none():
    with pytest.raises(ValueError, match="bins must be an integer >= 2, got 1"):
        check_int(1, "bins", 2)
    assert check_int(None, "bins", 2, allow_none=True) is None
    assert check_int(-4, "shift") == -4


def test_check_real():
    assert check_real(2, "scale") == 2.0
    assert check_real(np.float32(0.5), "scale", positive=True) == 0.5
    assert check_real(np.inf, "upper", allow_inf=True) == np.inf
    assert check_real(0.0, "tol", minimum=0.0) == 0.0


@pytest.mark.parametrize(
    ("value", "kwargs", "message"),
    [
        (np.nan, {}, "x must be a finite number, got nan"),
        (np.inf, {}, "x must be a finite number, got inf"),
        (np.nan, {"allow_inf": True}, "x must be a number, got nan"),
        (-1.0, {"minimum": 0.0}, "x must be a finite number >= 0.0, got -1.0"),
        (0.0, {"positive": True}, "x must be a finite number > 0, got 0.0"),
        (-np.inf, {"positive": True, "allow_inf": True}, "x must be a number > 0, got -inf"),
    ],
)
def test_check_real_refuses_out_of_range(value, kwargs, message):
    with pytest.raises(ValueError, match=message):
        check_real(value, "x", **kwargs)


@pytest.mark.parametrize("value", [True, "1.0", None, [1.0]])
def test_check_real_refuses_non_numbers(value):
    with pytest.raises(TypeError, match=f"x must be a number, got {type(value).__name__}"):
        check_real(value, "x")


def test_check_probability():
    assert check_probability(0.25) == 0.25
    for bad in (0, 1, 1.5, -0.1):
        with pytest.raises(ValueError, match=rf"delta must be in \(0, 1\), got {bad!r}"):
            check_probability(bad, "delta")
    with pytest.raises(ValueError, match="prob must be a finite number"):
        check_probability(np.nan)


@dataclasses.dataclass(frozen=True)
class _Opts:
    draws: int = 10
    tune: int = 5


def test_as_options_defaults_instances_and_dicts():
    assert as_options(_Opts, None, "opts") == _Opts()
    given = _Opts(draws=1)
    assert as_options(_Opts, given, "opts") is given
    assert as_options(_Opts, {"tune": 7}, "opts") == _Opts(draws=10, tune=7)


def test_as_options_names_unknown_keys_and_wrong_types():
    with pytest.raises(TypeError, match=r"unknown opts option\(s\) \['draw', 'x'\]; _Opts takes"):
        as_options(_Opts, {"draw": 3, "x": 1}, "opts")
    with pytest.raises(TypeError, match="opts= takes a _Opts or a dict of its fields, got list"):
        as_options(_Opts, [("draws", 3)], "opts")


def test_check_delta_takes_zero_to_one_and_says_why_not():
    assert check_delta(0) == 0.0 and check_delta(0.5) == 0.5
    with pytest.raises(ValueError, match=r"delta must be in \[0, 1\), got 1.0: every epsilon"):
        check_delta(1.0)
    with pytest.raises(ValueError, match=r"target must be in \[0, 1\), got -0.1: target is a"):
        check_delta(-0.1, "target")
    with pytest.raises(ValueError, match="finite"):
        check_delta(float("nan"))
    with pytest.raises(TypeError, match="number"):
        check_delta("0.1")
