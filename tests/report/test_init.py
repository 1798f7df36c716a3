"""The report package (:mod:`pymc_edp.report`): one public path for every name."""

import pymc_edp as edp
from pymc_edp import diagnostics, report


def test_public_names_have_one_public_path():
    assert set(report.__all__) == {
        "Headline",
        "KhatCounts",
        "diagnose",
        "edp_result_text",
        "format_interval",
        "headline",
        "khat_counts",
        "noise_caution",
        "tuning_result_text",
    }
    for name in report.__all__:
        assert name not in diagnostics.__all__ and not hasattr(diagnostics, name)
        assert getattr(edp.report, name) is getattr(report, name)
    assert "bin_log_ratios" in diagnostics.__all__ and not hasattr(report, "bin_log_ratios")
