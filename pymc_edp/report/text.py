"""The text of the results: their printout (``repr``) and the plain-language diagnosis.

The headline's sentences are :func:`pymc_edp.report.headline`'s and the k-hat table
:func:`pymc_edp.report.khat_counts`'s, as in the HTML view and the figures.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_edp.base.common import PARAMETER_DIM, TRIAL_DIM
from pymc_edp.base.validate import check_probability
from pymc_edp.core.neighbours import neighbour_words
from pymc_edp.diagnostics import continuous_limit, emi, empty_bins, epsilon_interval, epsilon_mcse
from pymc_edp.diagnostics._common import flat_parameters, refitted
from pymc_edp.report._common import AuditSummary, TuningSummary
from pymc_edp.report.headline import format_interval, headline
from pymc_edp.report.khat import khat_counts

__all__ = [
    "MAX_ELEMENTS",
    "diagnose",
    "edp_result_text",
    "parameter_rows",
    "tuning_heading",
    "tuning_result_text",
]

#: Elements of one variable the printout and the HTML view list, the most exposed first, when
#: it has more (``res.summary()`` and ``res.epsilon_by_var`` have them all).
MAX_ELEMENTS = 10


def neighbour_kind(result: AuditSummary) -> str:
    """What one neighbour is, in words (``"record removed"``)."""
    return neighbour_words(result.neighbour)


def smoothing_text(result: AuditSummary) -> str:
    """The audit's smoothing, ``"none"`` for 0."""
    return f"{result.smoothing:g}" if result.smoothing > 0 else "none"


def parameter_rows(table: xr.Dataset, most: int = MAX_ELEMENTS) -> list[tuple[np.ndarray, str]]:
    """The rows of the flat parameter table the views list, variable by variable.

    A variable of at most ``most`` elements has every row, in order; a longer one its
    ``most`` largest epsilons, largest first (NaN last), and a note of how many more there
    are and where they are.

    Returns
    -------
    list of (ndarray, str)
        Per variable, in the order of ``table`` (``epsilon`` and ``var_name`` over
        ``parameter``): its rows' positions in ``table`` and the note ("" when every row
        is listed).

    Examples
    --------
    >>> eps = np.r_[0.1, np.arange(12) / 10]
    >>> ds = xr.Dataset({"epsilon": ("parameter", eps),
    ...                  "var_name": ("parameter", ["a"] + ["mu"] * 12)})
    >>> (a, _), (mu, note) = parameter_rows(ds, most=3)
    >>> a.tolist(), mu.tolist()
    ([0], [12, 11, 10])
    >>> note
    "... and 9 more elements of mu (res.epsilon_by_var['mu'])"
    """
    names = np.asarray(table["var_name"].values).astype(str)
    eps = np.nan_to_num(np.asarray(table["epsilon"].values, dtype=float), nan=-np.inf)
    out = []
    for name in dict.fromkeys(names.tolist()):  # the variables, in order
        rows = np.flatnonzero(names == name)
        if rows.size <= most:
            out.append((rows, ""))
            continue
        top = rows[np.argsort(-eps[rows], kind="stable")[:most]]
        more = rows.size - most
        element = "element" if more == 1 else "elements"
        note = f"... and {more} more {element} of {name} (res.epsilon_by_var[{name!r}])"
        out.append((top, note))
    return out


def edp_result_text(result: AuditSummary) -> str:
    """The printout of an audit result (``repr(res)``).

    The parameter table (at most :data:`MAX_ELEMENTS` rows of a variable,
    :func:`parameter_rows`), epsilon, the headline (:func:`pymc_edp.report.headline`), the
    Pareto k-hat table, what pruning skipped and the warnings.

    Examples
    --------
    >>> text = edp.report.edp_result_text(res)
    >>> text == repr(res)
    True
    >>> print(text.splitlines()[0])
    Empirical DP audit (B-EDP, B = 10, psis)
    """
    lines = [
        f"Empirical DP audit (B-EDP, B = {result.bins}, {result.method})",
        f"{result.n_neighbours} neighbours ({neighbour_kind(result)}), {result.n_samples} "
        f"posterior draws, smoothing = {smoothing_text(result)}",
        "",
    ]
    lines += _parameter_lines(result)
    head = headline(result)
    bound = "a lower bound; " if head.lower_bound else ""
    lines += [
        "",
        f"epsilon = {result.epsilon:.3f}  ({bound}max over parameters and neighbours; worst "
        f"neighbour: {result.worst_neighbour})",
        *head.lines(),
        "",
        *_khat_lines(result),
        *_pruning_lines(result),
    ]
    shown = [w for w in result.warnings if w not in (head.left_out, head.fit)]  # said above
    if shown:
        lines += ["", "Warnings:"] + [f"- {w}" for w in shown]
    return "\n".join(lines)


def _parameter_lines(result: AuditSummary) -> list[str]:
    """The parameter table of the printout, with a note under each variable cut short."""
    df = result.summary().drop(columns="var_name")
    if not df["lower_bound"].any():
        df = df.drop(columns="lower_bound")
    groups = parameter_rows(flat_parameters(result))
    shown = np.concatenate([rows for rows, _ in groups])
    table = df.iloc[shown].to_string(float_format=lambda x: f"{x:.3f}").splitlines()
    at = len(table) - shown.size  # the header's lines
    lines = table[:at]
    for rows, note in groups:
        lines += table[at : at + rows.size]
        at += rows.size
        if note:
            lines.append(note)
    return lines


def _khat_lines(result: AuditSummary) -> list[str]:
    """The Pareto k-hat table of the printout."""
    counts = khat_counts(result)
    lines = ["Pareto k diagnostic values:", f"{'':>28}{'Count':>7}{'Pct.':>9}"]
    for rng, cls, count, pct in counts.rows:
        label = f"{rng:>12}   ({cls})"
        lines.append(f"{label:<28}{count:>7}{pct:>8.1f}%")
    if counts.not_computed:
        lines.append(f"{'not computed (pruned, refit)':<28}{counts.not_computed:>7}")
    return lines


def _pruning_lines(result: AuditSummary) -> list[str]:
    """Say how many neighbours pruning skipped, and which parameter rows are bounds."""
    n_pruned = int(np.sum(result.pointwise["method"].values.astype(str) == "pruned"))
    if not n_pruned:
        return []
    lines = [
        f"Pruned: {n_pruned} of {result.n_neighbours} neighbours, whose bound "
        "max log r - min log r is below epsilon (pointwise['epsilon_bound']): "
        "epsilon is exact; they have no k-hat."
    ]
    parameters = flat_parameters(result)
    if "exact" in parameters and not bool(parameters["exact"].all()):
        labels = parameters[PARAMETER_DIM].values[~parameters["exact"].values]
        lines.append(
            f"The epsilons of {', '.join(map(str, labels[:5]))}"
            f"{'...' if labels.size > 5 else ''} are lower bounds (parameters[var]['exact']); "
            "audit with prune=False for their exact values."
        )
    return lines


def tuning_heading(result: TuningSummary) -> str:
    """What the prior was tuned to: a B-EDP epsilon, or a release's (what, ``k``, ``delta``).

    Examples
    --------
    >>> from types import SimpleNamespace
    >>> tuning_heading(SimpleNamespace(bins=20, neighbour="remove", audit=None))
    'Prior tuned to a target B-EDP (B = 20, neighbour = remove)'
    >>> rel = SimpleNamespace(release="synthetic", publishes="synthetic datasets", k=5,
    ...                       target_delta=1e-6)
    >>> print(tuning_heading(SimpleNamespace(bins=20, neighbour="remove", audit=rel)))
    Prior tuned to a target release epsilon (synthetic datasets, k = 5 at delta = 1e-06, ...)
    """
    audit = getattr(result, "audit", None)
    if audit is not None and hasattr(audit, "release"):
        what = audit.publishes or str(audit.release)
        return (
            f"Prior tuned to a target release epsilon ({what}, k = {int(audit.k)} at delta = "
            f"{float(audit.target_delta):g}, neighbour = {result.neighbour})"
        )
    return f"Prior tuned to a target B-EDP (B = {result.bins}, neighbour = {result.neighbour})"


def tuning_result_text(result: TuningSummary) -> str:
    """The printout of a prior-tuning result (``repr(res)``).

    Examples
    --------
    >>> print(edp.report.tuning_result_text(tuned).splitlines()[1])
    sigma0 = 1.2  (untuned 1.73; epsilon increasing in sigma0)
    """
    name = result.hyperparameter or "strength"
    lines = [
        tuning_heading(result),
        f"{name} = {result.value:.6g}  (untuned {result.initial_value:.6g}; epsilon "
        f"{result.direction} in {name})",
        f"epsilon = {result.epsilon:.4f} +- {result.mcse:.4f} (MCSE, {result.method})  target "
        f"{result.target_epsilon:.4f}  relative error {100 * result.relative_error:+.1f}%",
        f"untuned epsilon = {result.initial_epsilon:.4f}; {result.trials.sizes[TRIAL_DIM]} "
        f"trial values, stopped on {result.stopped}"
        + ("" if result.monotone else "; epsilon NOT monotone over the evaluated values"),
        "",
        "Utility cost (posterior mean and sd, untuned -> tuned):",
        result.summary().to_string(float_format=lambda x: f"{x:.4g}"),
        "",
        "Warnings:",
    ]
    lines += [f"- {w}" for w in result.warnings]
    return "\n".join(lines)


def diagnose(result: AuditSummary, prob: float = 0.9) -> str:
    """A plain-language report of how far to trust the audit's epsilon.

    The headline (:func:`headline`), then as far as the result's weights allow: the
    Monte-Carlo error, Abowd's EMI (the noise floor of refit-and-count, not an error of this
    estimate), bins without weight and the ``B -> inf`` reference.

    Examples
    --------
    >>> report = edp.report.diagnose(res, prob=0.9)
    >>> print(report.splitlines()[0])
    epsilon = 0.75... (B = 10, smoothing = none)
    >>> "90% Monte-Carlo interval" in report and "EMI" in report
    True
    """
    prob = check_probability(prob, "prob")
    head = headline(result)
    bound = " (a lower bound)" if head.lower_bound else ""
    lines = [
        f"epsilon = {result.epsilon:.3f}{bound} (B = {result.bins}, "
        f"smoothing = {smoothing_text(result)})",
        *[f"  {line}" for line in head.lines()],
    ]
    if prob != 0.9 or result.log_weights is not None:
        try:
            iv = epsilon_interval(result, prob)
            se = epsilon_mcse(result)
        except ValueError as err:
            lines.append(f"  (no further Monte-Carlo detail: {err})")
        else:
            lo, hi = (float(v) for v in iv["epsilon"].values)
            worst = int(np.nanargmax(se["estimate_i"].values))
            ess = float(se["ess_i"].values[worst])
            ess_text = f"{ess:.0f} of {result.n_samples} draws" if np.isfinite(ess) else "a refit"
            lines.append(
                f"  Monte-Carlo s.e. {float(se['epsilon']):.3g}, {100 * prob:.0f}% interval "
                f"{format_interval((lo, hi))} (effective sample size of the worst bin's "
                f"estimate: {ess_text})"
            )
    if result.draws is not None:
        em = emi(result)
        lines.append(
            f"  Abowd's EMI, the noise floor of refit-and-count with {em.attrs['n_draws']} "
            f"independent draws (not an error of this estimate): {float(em['emi']):.3g}"
        )
    if result.log_weights is not None and result.draws is not None:
        try:
            eb = empty_bins(result)
            lim = continuous_limit(result)
        except ValueError:  # only the weights of the neighbours that can set epsilon
            pass
        else:
            lines += [
                f"  bins with no weight: {int(eb['n_empty'].sum())}; with under one draw's "
                f"weight: {int(eb['n_under_one_draw'].sum())}",
                f"  B -> inf reference (largest |log density ratio| over the draws): "
                f"{float(lim['epsilon_inf']):.3f}",
            ]
            if lim.attrs["note"]:
                lines.append("  Note: " + lim.attrs["note"])
    if refitted(result).any():
        lines.append(
            "  Note: refitted and moment-matched neighbours' errors are their own estimates' "
            "(pointwise['refit_mcse'])."
        )
    return "\n".join(lines)
