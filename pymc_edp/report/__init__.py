"""The report of an audit: what its epsilon is worth, said once for every view.

Above the results (:mod:`pymc_edp.results`) and below the figures (:mod:`pymc_edp.plots`),
this is the one place where an audit is put into words and counts, so that the text, the
HTML view and the figures cannot disagree:

* :func:`headline` -- epsilon's 90% Monte-Carlo interval, whether it is a lower bound (and
  why), whether refits confirmed it, and the one statement about noise (:class:`Headline`,
  :func:`format_interval`, :func:`noise_caution`);
* :func:`khat_counts` -- every neighbour's Pareto k-hat class and the counts per class
  (:class:`KhatCounts`), the one classification of the printout, the HTML view and the
  figures (:func:`pymc_edp.base.psis.khat_classes`);
* :func:`edp_result_text`, :func:`tuning_result_text` -- the printouts of the two results
  (their ``repr``); :func:`pymc_edp.report.release.release_text` that of a
  :class:`~pymc_edp.ReleaseResult`, from the facts its HTML view shows too
  (:func:`pymc_edp.report.release.release_facts`);
* :func:`diagnose` -- the plain-language report of how far to trust epsilon
  (``res.diagnose()``).

The numbers themselves (intervals, EMI, eps(B), bin log ratios, ...) are computed by
:mod:`pymc_edp.diagnostics`; the HTML view is :mod:`pymc_edp.plots.html`.
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
