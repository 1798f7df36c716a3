"""Tests of the posterior variables an audit bins (:mod:`pymc_edp.core.select`)."""

import numpy as np
import pytest
import xarray as xr

from pymc_edp.core.select import (
    CONSTANT,
    DATA_COPY,
    LeftOut,
    drop_data_copies,
    left_out_from_json,
    left_out_message,
    left_out_to_json,
    select_var_names,
    unconstrained_copies,
)


@pytest.fixture
def posterior():
    draws = np.zeros((2, 10))
    names = ["lam", "lam_log__", "beta", "sigma", "sigma_log__"]
    return xr.Dataset({n: (("chain", "draw"), draws) for n in names})


def test_default_leaves_out_unconstrained_copies(posterior):
    """nutpie on PyMC 5 stores ``lam_log__`` beside ``lam``: the same draws, transformed."""
    assert select_var_names(posterior, None, None) == ["lam", "beta", "sigma"]
    # asked for by name, it is audited
    assert select_var_names(posterior, ["lam_log__"], None) == ["lam_log__"]
    assert unconstrained_copies(["x_interval__", "y_log__", "y"]) == ["y_log__"]


def test_arviz_conventions(posterior):
    assert select_var_names(posterior, "~beta", None) == [
        "lam",
        "lam_log__",
        "sigma",
        "sigma_log__",
    ]
    assert select_var_names(posterior, "sig", "like") == ["sigma", "sigma_log__"]
    assert select_var_names(posterior, "^l", "regex") == ["lam", "lam_log__"]
    with pytest.raises(KeyError, match="not found"):
        select_var_names(posterior, ["tau"], None)
    with pytest.raises(ValueError, match="leaves no variable"):
        select_var_names(
            posterior, ["~lam", "~lam_log__", "~beta", "~sigma", "~sigma_log__"], None
        )


# ------------------------------------------------ constant elements and data copies (issue 31)
def _draws(rng, *rows, s=200):
    """Rows of a (parameter, sample) matrix: a number is a constant row, None a free one."""
    return np.vstack([np.full(s, r) if r is not None else rng.normal(size=s) for r in rows])


@pytest.fixture
def rng():
    return np.random.default_rng(31)


@pytest.mark.parametrize("explicit", [False, True])
def test_constant_elements_are_left_out_and_the_free_ones_audited(rng, explicit):
    """An LKJ correlation matrix: unit diagonal, free off-diagonal; asked for by name too."""
    draws = _draws(rng, 1.0, None, None, 1.0)
    draws[1] = draws[2] = np.tanh(draws[1])
    draws[3] += rng.normal(size=draws.shape[1]) * 1e-16  # 1 up to the last bit
    labels = ["corr[0, 0]", "corr[0, 1]", "corr[1, 0]", "corr[1, 1]"]
    keep, messages, left = drop_data_copies(
        draws,
        ["corr"] * 4,
        explicit=explicit,
        observed={"y": [1.0, 2.0]},
        labels=labels,
        reads_data={"corr": False},
    )
    assert keep.tolist() == [False, True, True, False]
    assert left == [LeftOut("corr", CONSTANT, ("corr[0, 0]", "corr[1, 1]"), "1 in every draw")]
    assert messages == [left_out_message(left)]
    assert "'corr[0, 0]', 'corr[1, 1]' of 'corr' are constant" in messages[0]
    assert "copy" not in messages[0] and "disclose" not in messages[0]


def test_a_constant_equal_to_a_data_value_is_a_copy_only_without_the_model(rng):
    """A cutpoint fixed at 0 with ordinal data 0..3: the model's graph tells them apart."""
    draws = _draws(rng, 0.0, None, None)
    y = {"y": np.array([0, 1, 2, 3, 0])}
    labels = ["cut[0]", "cut[1]", "cut[2]"]
    keep, _, left = drop_data_copies(
        draws, ["cut"] * 3, explicit=True, observed=y, labels=labels, reads_data={"cut": False}
    )
    assert keep.tolist() == [False, True, True]
    assert [(lo.reason, lo.elements) for lo in left] == [(CONSTANT, ("cut[0]",))]
    # without the model the value decides: left out whole, and refused by name
    draws = np.vstack([draws, rng.normal(size=draws.shape[1])])
    keep, messages, left = drop_data_copies(
        draws, ["cut"] * 3 + ["beta"], explicit=False, observed=y, labels=[*labels, "beta"]
    )
    assert keep.tolist() == [False, False, False, True]
    assert [(lo.variable, lo.reason, lo.elements) for lo in left] == [("cut", DATA_COPY, ())]
    assert "'cut' is a copy of the data" in messages[0] and "pass model=" in messages[0]
    with pytest.raises(ValueError, match=r"\['cut'\] that cannot be audited.*copy of the data"):
        drop_data_copies(draws, ["cut"] * 3 + ["beta"], explicit=True, observed=y)


def test_what_the_model_computes_from_data_is_a_copy_whatever_its_values(rng):
    draws = _draws(rng, None, 7.5, None)
    keep, messages, left = drop_data_copies(
        draws, ["mu", "c", "c"], explicit=False, observed={}, reads_data={"c": True, "mu": False}
    )
    assert keep.tolist() == [True, False, False]
    assert [(lo.variable, lo.reason) for lo in left] == [("c", DATA_COPY)]
    assert "the model computes it from the data" in messages[0]


def test_observed_variable_in_the_posterior_is_a_copy(rng):
    """PyMC's imputed ``y``: its observed elements constant, its missing ones free."""
    draws = _draws(rng, 0.3, None, 1.2, None)
    keep, _, left = drop_data_copies(
        draws, ["y", "y", "y", "mu"], explicit=False, observed={"y": [0.3, 1.2]}
    )
    assert keep.tolist() == [False, False, False, True]
    assert left[0].reason == DATA_COPY and "observed variable" in left[0].detail


def test_a_wholly_constant_variable(rng):
    draws = _draws(rng, 3.0, 3.0, None)
    keep, messages, left = drop_data_copies(
        draws, ["fixed", "fixed", "mu"], explicit=True, observed={"y": [0.5]}
    )
    assert keep.tolist() == [False, False, True]
    assert left == [LeftOut("fixed", CONSTANT, (), "3 in every draw")]
    assert "'fixed' is constant (3 in every draw)" in messages[0]
    with pytest.raises(ValueError, match="no posterior variable is left to audit.*'fixed'"):
        drop_data_copies(draws[:2], ["fixed", "fixed"], explicit=True, observed={})


def test_nothing_left_out(rng):
    keep, messages, left = drop_data_copies(
        _draws(rng, None, None), ["a", "b"], explicit=False, observed={"y": [0.0]}
    )
    assert keep.all() and messages == [] and left == []
    assert left_out_message(left) == ""


def test_left_out_survives_json():
    left = (
        LeftOut("corr", CONSTANT, ("corr[0, 0]", "corr[1, 1]"), "1 in every draw"),
        LeftOut("y", DATA_COPY, (), "it is an observed variable"),
    )
    assert left_out_from_json(left_out_to_json(left)) == left
    assert left_out_from_json("[]") == ()
    text = left_out_message(left)
    assert text.startswith("Left out of the audit: 'corr[0, 0]'") and text.endswith("not 0.")


def test_a_parameter_on_a_tiny_scale_is_not_constant(rng):
    """issue 32: a Binomial p near 1e-17 varying by 3% was left out as 'constant'."""
    tiny = 1.1e-17 * np.exp(0.03 * rng.normal(size=(2, 200)))
    zero = np.zeros((2, 200))  # an exact constant 0 stays constant
    keep, messages, left = drop_data_copies(
        np.stack([tiny.ravel(), zero.ravel()]), ["p", "z"], explicit=True, observed={"y": [3]}
    )
    assert keep.tolist() == [True, False]
    assert left == [LeftOut("z", CONSTANT, (), "0 in every draw")]
    assert messages == [left_out_message(left)]
