"""The printout of a release audit (:mod:`pymc_edp.report.release`)."""

import dataclasses
import html

import numpy as np
import pytest

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools
from pymc_edp.plots.release import release_html
from pymc_edp.report.release import POST_PROCESSING, release_facts, release_text


@pytest.fixture(scope="module")
def res():
    return edp.audit_release(
        load_eight_schools(), release="draws", k=5, delta=1e-3, progressbar=False,
        options={"n_bootstrap": 20}, random_seed=0,
    )  # fmt: skip


def test_repr_is_the_printout(res):
    assert repr(res) == release_text(res)


def test_printout_says_what_is_published_and_the_headline(res):
    text = release_text(res)
    lo, hi = res.interval
    assert "posterior draws" in text and "k = 5" in text and "record removed" in text
    headline = (
        f"epsilon = {res.headline:.3f} [{lo:.3f}, {hi:.3f}] (90% MC interval) at "
        "delta = 0.001 for 5 releases"
    )
    assert headline in text
    assert f"worst neighbour: {res.worst_neighbour}" in text
    assert "lower bound" not in text.lower()


def test_printout_lists_the_comparison_and_details(res):
    text = release_text(res)
    worst = float(res.comparison["worst"].sel(level="draws"))
    assert f"draws          {worst:.3f}" in text
    assert "can be no less private than an earlier one" in text
    assert f"posterior draws: {res.details['draws']}" in text
    assert "log-mean bias" in text and "discretisation" in text


def test_text_and_html_say_the_same(res):
    res = dataclasses.replace(res, notes=("first note", "second <note>"))
    facts = release_facts(res)
    text, page = release_text(res), release_html(res)
    for fact in (facts.epsilon, facts.interval, facts.delta, *facts.details[0]):
        assert fact in text and fact in page
    assert facts.headline in text and facts.headline.replace("'", "&#x27;") in page
    assert "- first note" in text and "first note" in page
    assert "second <note>" in text and "second &lt;note&gt;" in page
    assert html.escape(POST_PROCESSING) in page


@pytest.mark.parametrize(
    "change", [{"lower_bound": True}, {"interval": (5.0, float("inf"))}], ids=["flag", "inf"]
)
def test_lower_bound_wording(res, change):
    low = dataclasses.replace(res, **change)
    facts = release_facts(low)
    assert facts.lower_bound and facts.bound
    for view in (release_text(low), release_html(low)):
        assert "a lower bound" in view and "Lower bound:" in view
    if "interval" in change:
        assert "[5.000, inf)" in release_text(low)


def test_facts_without_comparison_or_details(res):
    bare = dataclasses.replace(res, comparison=res.comparison.drop_dims("level"), details={})
    facts = release_facts(bare)
    assert facts.comparison == () and facts.post_processing == "" and facts.details == ()
    text = release_text(bare)
    assert "Post-processing" not in text and "Details" not in text


def test_one_release_is_singular(res):
    one = dataclasses.replace(res, k=1, details={"flag": np.bool_(True), "n": np.int64(3)})
    text = release_text(one)
    assert "for 1 release" in text and "k = 1 independent release," in text
    assert release_facts(one).details == ()  # unknown keys are not shown
