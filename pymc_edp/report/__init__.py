"""The report of an audit: what its epsilon is worth, said once for every view.

Said here only, so that the text, the HTML view and the figures cannot disagree:
:func:`headline` (interval, lower bound, verification, noise), :func:`khat_counts`, the
printouts :func:`edp_result_text` and :func:`tuning_result_text`, and :func:`diagnose`. The
numbers are :mod:`pymc_edp.diagnostics`'.
"""

from pymc_edp.report.headline import Headline, format_interval, headline, noise_caution
from pymc_edp.report.khat import KhatCounts, khat_counts
from pymc_edp.report.text import diagnose, edp_result_text, tuning_result_text

__all__ = [
    "Headline",
    "KhatCounts",
    "diagnose",
    "edp_result_text",
    "format_interval",
    "headline",
    "khat_counts",
    "noise_caution",
    "tuning_result_text",
]
