"""The protocols the report reads (:mod:`pymc_edp.report._common`)."""

from support import tuning_result

from pymc_edp.diagnostics._common import AuditData
from pymc_edp.report._common import AuditSummary, TuningSummary


def test_an_audit_result_is_an_audit_summary(nn_result):
    assert isinstance(nn_result, AuditSummary) and isinstance(nn_result, AuditData)
    assert not isinstance(nn_result, TuningSummary)


def test_a_tuning_result_is_a_tuning_summary():
    res = tuning_result()
    assert isinstance(res, TuningSummary) and not isinstance(res, AuditSummary)


def test_an_audit_summary_extends_the_diagnostics_data():
    extra = {"khat_threshold", "n_samples", "n_neighbours", "lower_bound", "summary"}
    assert extra <= set(dir(AuditSummary))
    assert {"pointwise", "log_weights", "draws", "bins"} <= set(dir(AuditSummary))
