"""The headline (:mod:`pymc_edp.report.headline`): one report of what epsilon is worth."""

import dataclasses

import numpy as np
import pytest

from pymc_edp.base import limits
from pymc_edp.report import Headline, format_interval, headline, noise_caution


def test_headline_of_an_audit(nn_result):
    head = headline(nn_result)
    assert head.epsilon == nn_result.epsilon
    lo, hi = head.interval
    assert 0 < lo <= nn_result.epsilon <= hi
    assert head.interval == pytest.approx(nn_result.mc_interval90)
    assert head.lower_bound is False and head.limit_lines == () and head.caution == ""
    assert head.verification == nn_result.verification_note


def test_headline_recomputes_a_missing_interval_from_the_weights(nn_result):
    res = dataclasses.replace(nn_result, mc_interval90=None)
    lo, hi = headline(res).interval
    iv = res.interval(0.9)["epsilon"].values
    assert (lo, hi) == (float(iv[0]), float(iv[1]))
    bare = dataclasses.replace(res, log_weights=None)
    assert headline(bare).interval is None
    assert headline(bare).lines()[0].startswith("Verification:")


def test_a_lower_bound_opens_the_interval_and_says_why(nn_result):
    pw = nn_result.pointwise
    codes = np.full(pw.sizes["neighbour"], limits.NONE, dtype=pw["limit"].dtype)
    codes[[2, 5]] = limits.EMPTY_BIN
    bounded = np.zeros(codes.size, dtype=bool)
    bounded[[2, 5]] = True
    res = dataclasses.replace(
        nn_result,
        pointwise=pw.assign(limit=("neighbour", codes), lower_bound=("neighbour", bounded)),
    )
    head = headline(res)
    assert head.lower_bound and head.interval[1] == np.inf
    (line,) = head.limit_lines
    assert line.startswith("2 neighbour(s) at a resolution limit")
    assert f"Lower bound: {line}" in head.lines()
    assert "inf)" in head.lines()[0]


def test_noise_caution_branches():
    assert noise_caution(1.0, (0.9, 1.1)) == ""
    assert noise_caution(1.0, None) == ""
    assert noise_caution(float("inf"), (0.9, 1.1)) == ""
    assert noise_caution(1.0, (0.9, float("inf"))) == ""  # a lower bound: said elsewhere
    assert "reaches 0" in noise_caution(0.1, (0.0, 0.3))
    assert "wider than epsilon" in noise_caution(0.1, (0.05, 0.3))
    assert noise_caution(0.1, (0.0, 0.3), prob=0.8).startswith("the 80% Monte-Carlo")


def test_format_interval_and_lines():
    assert format_interval((0.1, 0.25)) == "[0.100, 0.250]"
    assert format_interval((0.1, np.inf)) == "[0.100, inf)"
    head = Headline(0.2, (0.0, 0.3), False, (), "unverified", "be careful")
    assert head.lines() == [
        "90% Monte-Carlo interval of epsilon: [0.000, 0.300]",
        "Verification: unverified",
        "Caution: be careful",
    ]


def test_what_was_left_out_is_said_in_the_words_of_the_warning(nn_result):
    """Issue 31: the printout, the HTML view and the warning name the left-out elements."""
    from pymc_edp.core.select import LeftOut, left_out_message
    from pymc_edp.plots.html import edp_result_html
    from pymc_edp.report import edp_result_text

    assert headline(nn_result).left_out == ""
    left = (LeftOut("corr", "constant", ("corr[0, 0]", "corr[1, 1]"), "1 in every draw"),)
    message = left_out_message(left)
    res = dataclasses.replace(nn_result, left_out=left, warnings=(message,))
    head = headline(res)
    assert head.left_out == message and message in head.lines()
    text = edp_result_text(res)
    assert text.count(message) == 1 and "Warnings:" not in text
    page = edp_result_html(res)
    assert page.count("corr[0, 0]") == 1 and "left out" in page
