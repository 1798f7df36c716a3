"""Tests of the posterior variables an audit bins (:mod:`pymc_edp.model.select`)."""

import numpy as np
import pytest
import xarray as xr

from pymc_edp.model.select import select_var_names, unconstrained_copies


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
