"""Tests of :mod:`pymc_edp.auditing.inputs`: the fit is read once, into a frozen object."""

import dataclasses

import numpy as np
import pytest
from pipeline_support import make_settings
from support import set_group

import pymc_edp as edp
from pymc_edp.auditing.inputs import Inputs, read_fit, read_inputs
from pymc_edp.core.loglik import posterior_matrix
from pymc_edp.model.compat import get_group
from pymc_edp.model.moment_match import MatchInputs


def test_reads_draws_neighbours_and_bins(normal):
    inp = read_inputs(read_fit(normal, None), None, make_settings(), var_names=["mu"])
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
    assert inp.relation == edp.Remove() and inp.relation.candidates == {}
    assert inp.match.unconstrained is None
    assert inp.match.draws is inp.draws  # nothing dropped: one matrix


def test_match_inputs_are_what_moment_matching_would_read(outlier):
    model, idata = outlier
    inp = read_inputs(read_fit(idata, model), model, make_settings(model))
    mine = inp.match
    theirs = MatchInputs.from_fit(idata, model, inp.names)
    np.testing.assert_array_equal(mine.draws, theirs.draws)
    assert set(mine.observed) == set(theirs.observed) == {"y"}
    np.testing.assert_array_equal(mine.observed["y"], theirs.observed["y"])


def test_neighbour_options_are_applied(normal):
    groups = np.repeat(np.arange(4), 2)
    inp = read_inputs(read_fit(normal, None), None, make_settings(neighbour={"groups": groups}))
    assert len(inp.neighbours) == 4
    np.testing.assert_array_equal(inp.neighbours.n_rows, 2)


def test_data_copies_are_left_out_with_a_message(normal):
    post = get_group(normal, "posterior")
    set_group(normal, "posterior", post.assign(c=post["mu"] * 0 + 3.0))
    inp = read_inputs(read_fit(normal, None), None, make_settings())
    assert "c" not in inp.names and any("'c'" in m or "c" in m for m in inp.messages)
    np.testing.assert_array_equal(inp.match.draws, posterior_matrix(post, inp.names)[0])


def test_too_few_draws_per_bin_is_refused(normal):
    with pytest.raises(ValueError, match="too few draws"):
        read_inputs(read_fit(normal, None), None, make_settings(bins=200))


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
        read_inputs(read_fit(_empty_fit([("y", 0)]), None), None, make_settings(bins=5))


def test_an_empty_variable_beside_others_is_no_neighbour_of_its_own():
    inp = read_inputs(
        read_fit(_empty_fit([("y", 4), ("z", 0)]), None), None, make_settings(bins=5)
    )
    assert len(inp.neighbours) == 4


def _imputed_fit(rng, dims: bool):
    """A regression on ``x`` whose ``y`` has missing values, with exact-enough draws.

    ``y[27]`` is an outlier; rows 3, 10 and 20 are missing, so it is the 25th observed
    value (position 24 of ``y_observed``). The draws are not sampled: ``a`` and ``b`` near
    the least-squares fit, the joined ``y`` the data with the missing rows drawn.
    """
    import pymc as pm

    from pymc_edp.model.compat import from_dict

    n, missing = 30, [3, 10, 20]
    x = rng.normal(size=n)
    y = 1.0 + 2.0 * x + rng.normal(0.0, 1.0, n)
    y[27] = 9.0
    y[missing] = np.nan
    obs = [f"r{i}" for i in range(n)] if dims else None
    with pm.Model(coords={"obs": obs} if dims else None) as model:
        a = pm.Normal("a", 0, 5)
        b = pm.Normal("b", 0, 5)
        xd = pm.Data("x", x, dims="obs" if dims else None)
        with pytest.warns(UserWarning, match="missing values"):  # PyMC's ImputationWarning
            pm.Normal("y", a + b * xd, 1.0, observed=y, dims="obs" if dims else None)
    shape = (2, 300)
    a_draws = rng.normal(1.0, 0.2, shape)
    b_draws = rng.normal(2.0, 0.2, shape)
    unobserved = rng.normal(0.0, 1.0, (*shape, len(missing)))
    joined = np.broadcast_to(y, (*shape, n)).copy()
    joined[..., missing] = unobserved
    observed = y[~np.isnan(y)]
    return model, from_dict(
        {
            "posterior": {"a": a_draws, "b": b_draws, "y_unobserved": unobserved, "y": joined},
            "observed_data": {"y_observed": observed},
        },
        coords={"obs": obs} if dims else None,
        dims={"y": ["obs"]} if dims else None,
    )


@pytest.mark.parametrize("dims", [False, True])
def test_imputed_records_are_labelled_by_their_rows_in_the_data(rng, dims):
    # PyMC splits y into y_observed (27 values end to end) and y_unobserved; its
    # log-likelihood cannot be streamed (the covariate has 30 rows, the records 27), so
    # "auto" computes the group whole rather than failing, and the records are the rows
    # of y: the outlier, row 27, is labelled 27 ("r27"), not its position 24
    model, idata = _imputed_fit(rng, dims)
    inp = read_inputs(read_fit(idata, model), model, make_settings(model), var_names=["a", "b"])
    assert inp.ll.names == ("y_observed",) and inp.ll.n_rows == 27
    expected = [i for i in range(30) if i not in (3, 10, 20)]
    labels = [f"r{i}" for i in expected] if dims else expected
    assert list(inp.neighbours.labels) == labels
    # the same rows without the model: the columns of the joined y the draws never change
    inp = read_inputs(
        read_fit(set_loglik(idata, model), None), None, make_settings(), var_names=["a", "b"]
    )
    assert list(inp.neighbours.labels) == labels


def set_loglik(idata, model):
    """``idata`` with the log_likelihood group PyMC computes for ``model``."""
    from pymc_edp.model.pymc import ensure_log_likelihood

    set_group(idata, "log_likelihood", ensure_log_likelihood(idata, model))
    return idata


def test_a_potential_weighting_observed_records_names_them_as_mis_measured(rng):
    import pymc as pm

    from pymc_edp.model.compat import from_dict

    y = rng.normal(size=12)
    w = np.ones(12)
    w[[4, 9]] = 8.0
    coords = {"obs": [f"r{i}" for i in range(12)]}
    with pm.Model(coords=coords) as model:
        mu = pm.Normal("mu")
        obs = pm.Normal("y", mu, 1.0, observed=y, dims="obs")
        pm.Potential("weights", ((w - 1) * pm.logp(obs, y)).sum())
    mu = rng.normal(y.mean(), 0.1, (2, 300))
    idata = from_dict(
        {"posterior": {"mu": mu}, "observed_data": {"y": y}},
        coords=coords,
        dims={"y": ["obs"]},
    )
    inp = read_inputs(read_fit(idata, model), model, make_settings(model))
    (said,) = [m for m in inp.messages if "Potential" in m]
    assert "'weights'" in said and "records r4, r9 of 'y'" in said and "mis-measured" in said
    assert "pm.CustomDist" in said and "no neighbour" not in said
