"""Tests of :mod:`pymc_edp.pipeline.inputs`: the fit is read once, into a frozen object."""

import dataclasses

import numpy as np
import pytest
from pipeline_support import make_settings
from support import set_group

from pymc_edp.model.compat import get_group
from pymc_edp.model.loglik import posterior_matrix
from pymc_edp.model.moment_match import MatchInputs
from pymc_edp.pipeline.inputs import Inputs, read_inputs


def test_reads_draws_neighbours_and_bins(normal):
    inp = read_inputs(normal, None, make_settings(), var_names=["mu"])
    assert isinstance(inp, Inputs)
    with pytest.raises(dataclasses.FrozenInstanceError):
        inp.draws = None
    assert inp.names == ["mu"] and inp.par_labels == ["mu"]
    assert inp.draws.shape == (1, 1000) and inp.n_samples == 1000 and inp.n_chains == 2
    assert len(inp.neighbours) == 8 and inp.factorised and not inp.can_refit
    assert inp.bins.index.shape == (1, 1000)
    np.testing.assert_array_equal(
        inp.observed_y["y"], get_group(normal, "observed_data")["y"].values
    )
    assert inp.candidates == {} and inp.unconstrained is None
    assert inp.match_draws is inp.draws  # nothing dropped: one matrix


def test_match_inputs_are_what_moment_matching_would_read(outlier):
    model, idata = outlier
    inp = read_inputs(idata, model, make_settings(model))
    mine = inp.match_inputs()
    theirs = MatchInputs.from_idata(idata, model, inp.names)
    np.testing.assert_array_equal(mine.draws, theirs.draws)
    assert set(mine.observed) == set(theirs.observed) == {"y"}
    np.testing.assert_array_equal(mine.observed["y"], theirs.observed["y"])


def test_neighbour_options_are_applied(normal):
    groups = np.repeat(np.arange(4), 2)
    inp = read_inputs(normal, None, make_settings(neighbour={"groups": groups}))
    assert len(inp.neighbours) == 4
    np.testing.assert_array_equal(inp.neighbours.n_rows, 2)


def test_data_copies_are_left_out_with_a_message(normal):
    post = get_group(normal, "posterior")
    set_group(normal, "posterior", post.assign(c=post["mu"] * 0 + 3.0))
    inp = read_inputs(normal, None, make_settings())
    assert "c" not in inp.names and any("'c'" in m or "c" in m for m in inp.messages)
    np.testing.assert_array_equal(inp.match_draws, posterior_matrix(post, inp.names)[0])


def test_too_few_draws_per_bin_is_refused(normal):
    with pytest.raises(ValueError, match="too few draws"):
        read_inputs(normal, None, make_settings(bins=200))


def _empty_fit(names_sizes):
    from pymc_edp.model.compat import from_dict

    rng = np.random.default_rng(0)
    ll = {name: rng.normal(size=(2, 100, size)) for name, size in names_sizes}
    observed = {name: np.zeros(size) for name, size in names_sizes}
    posterior = {"mu": rng.normal(size=(2, 100))}
    return from_dict({"posterior": posterior, "log_likelihood": ll, "observed_data": observed})


def test_an_observed_variable_without_records_is_named_before_any_work():
    # issue 32: an audit of zero records ended in 'argmax of an empty sequence'
    with pytest.raises(ValueError, match=r"\['y'\] have zero records"):
        read_inputs(_empty_fit([("y", 0)]), None, make_settings(bins=5))


def test_an_empty_variable_beside_others_is_no_neighbour_of_its_own():
    inp = read_inputs(_empty_fit([("y", 4), ("z", 0)]), None, make_settings(bins=5))
    assert len(inp.neighbours) == 4
