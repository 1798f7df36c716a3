"""The printouts and the diagnosis (:mod:`pymc_edp.report.text`)."""

import dataclasses

import numpy as np
import pytest
import xarray as xr
from support import regression_audit, tuning_result

import pymc_edp as edp
from pymc_edp.diagnostics._common import flat_parameters
from pymc_edp.report import diagnose, edp_result_text, headline, tuning_result_text
from pymc_edp.report.text import MAX_ELEMENTS, parameter_rows


def _tuning(**changes):
    kw = dict(
        trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
        utility=xr.DataTree.from_dict({"mu": xr.Dataset({"mean_shift": 0.05, "audited": True})}),
        warnings=("a caveat",),
    )
    return tuning_result(**(kw | changes))


def test_the_printout_is_the_reports(nn_result):
    text = edp_result_text(nn_result)
    assert repr(nn_result) == str(nn_result) == text
    lines = text.splitlines()
    assert lines[0] == f"Empirical DP audit (B-EDP, B = {nn_result.bins}, psis)"
    assert f"epsilon = {nn_result.epsilon:.3f}" in text
    for line in headline(nn_result).lines():  # the headline's sentences, word for word
        assert line in lines
    assert "Pareto k diagnostic values:" in lines
    assert "Pruned" not in text and "lower_bound" not in text


def test_the_printout_says_what_pruning_skipped(nn_result):
    pw = nn_result.pointwise
    method = np.full(pw.sizes["neighbour"], "psis", dtype=object)
    method[:3] = "pruned"
    khat = pw["pareto_k"].values.copy()
    khat[:3] = np.nan
    res = dataclasses.replace(
        nn_result,
        pointwise=pw.assign(
            method=("neighbour", method.astype(str)), pareto_k=("neighbour", khat)
        ),
        parameters=nn_result.parameters.map_over_datasets(
            lambda ds: ds.assign(exact=ds["exact"] & False) if "exact" in ds else ds
        ),
        warnings=("first", "second"),
    )
    text = edp_result_text(res)
    assert f"Pruned: 3 of {res.n_neighbours} neighbours" in text
    assert "are lower bounds (parameters[var]['exact'])" in text
    assert any(ln.startswith("not computed (pruned, refit)") for ln in text.splitlines())
    assert text.endswith("Warnings:\n- first\n- second")


def test_diagnose_says_the_headline_and_the_details(nn_result):
    text = diagnose(nn_result)
    assert text == nn_result.diagnose() == edp.report.diagnose(nn_result, 0.9)
    lines = text.splitlines()
    assert lines[0].startswith(f"epsilon = {nn_result.epsilon:.3f} (B = {nn_result.bins}")
    for line in headline(nn_result).lines():
        assert f"  {line}" in lines
    assert "interval" in text and "EMI" in text and "B -> inf" in text
    assert "80% interval" in diagnose(nn_result, prob=0.8)


def test_diagnose_without_weights_uses_what_is_stored(nn_result):
    bare = dataclasses.replace(nn_result, log_weights=None, draws=None)
    text = diagnose(bare)
    assert "90% Monte-Carlo interval of epsilon" in text
    assert "EMI" not in text and "B -> inf" not in text
    assert "no further Monte-Carlo detail" in diagnose(bare, prob=0.8)


def test_diagnose_notes_refitted_neighbours(nn_result):
    pw = nn_result.pointwise
    method = np.full(pw.sizes["neighbour"], "psis", dtype=object)
    method[0] = "refit"
    res = dataclasses.replace(
        nn_result, pointwise=pw.assign(method=("neighbour", method.astype(str)))
    )
    assert "refitted and moment-matched neighbours' errors" in diagnose(res)


def test_the_tuning_printout_is_the_reports():
    res = _tuning()
    text = tuning_result_text(res)
    assert repr(res) == text
    lines = text.splitlines()
    assert lines[0] == "Prior tuned to a target B-EDP (B = 20, neighbour = remove)"
    assert "relative error +3.3%" in lines[2]
    assert "2 trial values, stopped on tolerance" in lines[3]
    assert text.endswith("Warnings:\n- a caveat")
    shaky = tuning_result_text(_tuning(monotone=False, hyperparameter=None))
    assert "NOT monotone" in shaky and shaky.splitlines()[1].startswith("strength = 1.2")


def test_diagnose_refuses_a_probability_outside_zero_one(nn_result):
    # issue 32: prob=1.5 was swallowed into "no further Monte-Carlo detail"
    with pytest.raises(ValueError, match=r"prob must be in \(0, 1\)"):
        diagnose(nn_result, prob=1.5)


def test_a_prior_tuned_to_a_release_target_is_headed_with_the_release():
    # issue 32: a prior tuned to a release target was headed 'Prior tuned to a target B-EDP'
    from pymc_edp.plots.html import tuning_result_html

    release = edp.ReleaseResult(
        "synthetic", 5, 1e-6, 1.0, (0.9, 1.1), 0.9, False, "3", "remove",
        xr.Dataset(), xr.Dataset(), xr.Dataset(), xr.Dataset(), publishes="synthetic datasets",
    )  # fmt: skip
    res = _tuning(audit=release, method="audit_release: synthetic datasets, k = 5 at delta 1e-06")
    heading = (
        "Prior tuned to a target release epsilon (synthetic datasets, k = 5 at delta = 1e-06, "
        "neighbour = remove)"
    )
    assert tuning_result_text(res).splitlines()[0] == heading
    assert "B-EDP" not in tuning_result_text(res)
    page = tuning_result_html(res)
    assert heading in page and "target B-EDP" not in page


@pytest.fixture(scope="module")
def long_vector():
    return regression_audit()


def test_a_long_vector_lists_its_most_exposed_elements_then_the_headline(long_vector):
    """Issue 39: a printout listed 235 ``mu[i]`` rows before the headline.

    A variable of more than MAX_ELEMENTS elements lists its largest epsilons, largest first,
    then says how many more there are and where; scalars keep their rows.
    """
    res = long_vector
    lines = repr(res).splitlines()
    mu = res.epsilon_by_var["mu"].values
    top = np.argsort(-mu, kind="stable")[:MAX_ELEMENTS]
    rows = [line.split()[0] for line in lines if line.startswith("mu[")]
    assert rows == [f"mu[{i}]" for i in top]
    listed = [float(line.split()[1]) for line in lines if line.startswith("mu[")]
    assert listed == sorted(listed, reverse=True) and listed[0] == pytest.approx(mu.max(), 1e-3)
    note = f"... and {mu.size - MAX_ELEMENTS} more elements of mu (res.epsilon_by_var['mu'])"
    assert lines[lines.index(note) - 1].startswith(f"mu[{top[-1]}] ")  # under its rows
    assert any(line.startswith("a ") for line in lines) and any(
        line.startswith("b ") for line in lines
    )
    # the headline is on the first screen, and the summary keeps every element
    assert next(i for i, line in enumerate(lines) if line.startswith("epsilon = ")) < 25
    assert len(res.summary()) == mu.size + 2


def test_parameter_rows_keeps_short_variables_whole_and_in_order(nn_result, long_vector):
    [(rows, note)] = parameter_rows(flat_parameters(nn_result))
    assert rows.tolist() == [0] and note == ""
    table = flat_parameters(long_vector)
    groups = parameter_rows(table, most=3)
    assert [len(rows) for rows, _ in groups] == [1, 1, 3]
    assert [note.split(" of ")[-1] for _, note in groups] == [
        "",
        "",
        "mu (res.epsilon_by_var['mu'])",
    ]
    assert "... and 1 more element of mu" in parameter_rows(table, most=199)[2][1]
    assert parameter_rows(table, most=200)[2][1] == ""
