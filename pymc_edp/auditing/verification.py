"""Refit the neighbours reweighting cannot estimate, then confirm the headline by refits.

A good k-hat is evidence, not proof: ``method="auto"`` refits the largest estimates and
compares (:class:`pymc_edp.VerifyOptions`).
"""

from __future__ import annotations

import dataclasses
import logging
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from pymc_edp.auditing.estimates import Errors, Estimates, pair_errors
from pymc_edp.auditing.inputs import Inputs
from pymc_edp.auditing.reweighting import Reweighted, unprune
from pymc_edp.auditing.settings import Settings
from pymc_edp.base import limits
from pymc_edp.base.psis import khat_threshold
from pymc_edp.refit.options import (
    VERIFY_AGREE,
    VERIFY_DISAGREE,
    VERIFY_FAILED,
    RefitOptions,
    VerifyOptions,
)
from pymc_edp.refit.outcome import Refits
from pymc_edp.refit.run import (
    FAILED_REFITS,
    RefitProblem,
    RefitSetupError,
    refit_neighbours,
    starting_points,
)

_log = logging.getLogger("pymc_edp")
_SEE_STATUS = " (see res.pointwise['status'])"
_RAISE_BUDGET = "Raise the budget or use method='refit'."

__all__ = [
    "Refitter",
    "Verification",
    "Verified",
    "choose_refits",
    "refit_and_verify",
    "refit_problem",
]


def refit_problem(inp: Inputs, settings: Settings, est: Estimates) -> RefitProblem:
    """What refits (and moment matching) need; worst replacements from the reweighted ``est``."""
    return RefitProblem(
        model=inp.model,
        ll=inp.ll,
        neighbours=inp.neighbours,
        names=tuple(inp.names),
        bins=inp.bins,
        smoothing=settings.smoothing.weighted,
        observed_y=inp.observed_y,
        relation=inp.relation,
        worst_candidate=est["worst_candidate"],
        draws=inp.draws,
        n_chains=inp.n_chains,
        count_smoothing=settings.smoothing.count,
        # coupled records: the pooled estimator would weight the refits' draws with the very
        # conditionals they check, so the refits are estimated from their own draws
        density_ratio=inp.factorised and not inp.blocks and not inp.coupled,
        rows=inp.match.rows,
        starts=starting_points(inp.posterior, inp.model) if inp.model is not None else (),
        posterior=inp.posterior,
    )


@dataclass(frozen=True)
class Verification:
    """What the headline's verification did: per neighbour, and in one status."""

    status: str  # "confirmed", "corrected", "incomplete", "unverified", "refit"
    note: str
    code: np.ndarray  # (neighbour,) int8: VERIFICATION codes
    checked: np.ndarray  # the estimate that was checked
    refit: np.ndarray  # the refit's estimate
    z: np.ndarray  # (refit - checked) / combined standard error
    messages: tuple[str, ...] = ()

    @classmethod
    def off(cls, n: int, note: str | None) -> Verification:
        """No verification (or not yet), for the reason ``note``."""
        status = "refit" if note and note.startswith("every neighbour refitted") else "unverified"
        nan = np.full(n, np.nan)
        return cls(status, note or "", np.zeros(n, np.int8), nan, nan.copy(), nan.copy())

    def but(self, status: str, note: str, *messages: str) -> Verification:
        """The same per-neighbour record with another status and note, and more messages."""
        return dataclasses.replace(
            self, status=status, note=note, messages=(*self.messages, *messages)
        )


@dataclass(frozen=True)
class Verified:
    """The estimates after refits and verification, with what the stage reports."""

    estimates: Estimates
    verification: Verification
    errors: Errors
    refits: Refits | None
    messages: tuple[str, ...] = ()


class Refitter:
    """Runs refits; its own copy of the estimates (``.estimates``) takes their values."""

    def __init__(self, problem: RefitProblem, settings: Settings, config: dict, est: Estimates):
        # refit sizes the audit did not take from the fit: PyMC's
        self.problem, self.settings, self.config = problem, settings.sized_for(None), config
        self.estimates = est.copy()
        self.outcomes: dict = {}
        self.messages: list[str] = []
        # why refits stopped (Ctrl-C, the time budget), and those of the last run left out
        self.stopped: str | None = None
        self.missing: tuple[int, ...] = ()
        # what each full-length refit sampled, as the last run said it ("": none ran)
        self.full_size = ""

    @property
    def deadline(self) -> float | None:
        """When the audit's time budget (``VerifyOptions(time_budget=)``) ends, if it has one."""
        vopts = self.settings.method.verify
        if vopts is None or vopts.time_budget is None:
            return None
        return self.settings.started + vopts.time_budget

    def run(
        self, indices: np.ndarray, short: RefitOptions | None = None, warm: bool = False
    ) -> None:
        """Refit ``indices``; successes replace estimates.

        ``short`` (short refits' options) or ``warm`` start them warm. After an interruption
        or past the deadline nothing more runs: ``stopped`` says why, ``missing`` which of
        ``indices`` have no refit.
        """
        indices = np.asarray(indices, dtype=np.int64)
        if self.stopped is not None:
            self.missing = tuple(int(k) for k in indices)
            return
        options, config = self.settings.refit, self.config
        if short is not None:
            options, config = short, {**config, **short.config(), "warm_start": True}
        elif warm:
            config = {**config, "warm_start": True}
        each = self.settings.refit_seconds(warm)
        if short is None and each is not None:
            _log.info(
                "expected cost: %d refit(s) of about %.1f s each (the fit's sampling time, "
                "scaled to a refit's size), %.0f s one after another",
                indices.size,
                each,
                each * indices.size,
            )
        run, refit_messages = refit_neighbours(
            indices,
            self.problem,
            options,
            random_seed=self.settings.seed,
            config=config,
            progressbar=self.settings.progressbar,
            warm_start=short is not None or warm,
            deadline=self.deadline,
        )
        self.stopped, self.missing = run.stopped, run.missing
        if short is None and run.size:
            self.full_size = run.size
        if short is not None:  # a failed short refit is refitted at full length
            refit_messages = [m for m in refit_messages if FAILED_REFITS not in m]
        self.messages.extend(refit_messages)
        self.outcomes.update(run.outcomes)
        est = self.estimates
        for k, estimate in run.estimates.items():
            out = run.outcomes[k]
            est["status"][k] = out.status if not out.reason else f"{out.status}: {out.reason}"
            if estimate is not None:
                est.set_row(k, estimate, estimate.se, "refit")


def choose_refits(khat, inp: Inputs, settings: Settings) -> tuple[np.ndarray, list[str]]:
    """Neighbours to refit, worst k-hat first, at most ``max_refits`` of them; and messages."""
    method, max_refits, nbs = settings.method, settings.refit.max_refits, inp.neighbours
    if method.refits_all or not inp.factorised:
        to_refit = np.arange(len(nbs))
    elif method.refits_unreliable and inp.can_refit:
        to_refit = np.flatnonzero(khat > khat_threshold(inp.n_samples))
    else:
        return np.array([], dtype=np.int64), []
    to_refit = to_refit[np.argsort(-np.nan_to_num(khat[to_refit], nan=np.inf), kind="stable")]
    if max_refits is None or to_refit.size <= max_refits:
        return to_refit, []
    left = to_refit[max_refits:]
    names = _labels(nbs, left)
    if inp.factorised:
        message = (
            f"max_refits={max_refits}: {left.size} neighbour(s) left to reweighting ({names})"
        )
    else:  # nothing else can estimate them
        message = (
            f"max_refits={max_refits}: {left.size} of {len(nbs)} neighbour(s) not evaluated "
            f"({names}): only a refit estimates them, so epsilon is a lower bound; raise "
            "max_refits, or rerun with the same checkpoint"
        )
    return to_refit[:max_refits], [message]


def _warm(vopts: VerifyOptions | None, settings) -> bool:
    """Whether full-length refits start warm (``vopts.warm_start``, default True).

    Not with a builder (no model to start from), nor for groups: a group left out can move
    the posterior far from the full-data draws, so groups are refitted cold.
    """
    warm_start = True if vopts is None else vopts.warm_start
    groups = getattr(getattr(settings, "neighbour", None), "groups", None)
    return warm_start and settings.refit.build_model is None and groups is None


def _labels(nbs, indices: np.ndarray, most: int = 10) -> str:
    """The labels of the first ``most`` neighbours of ``indices``, "..." after more."""
    shown = ", ".join(str(nbs.labels[k]) for k in indices[:most])
    return shown + ("..." if indices.size > most else "")


def refit_and_verify(
    inp: Inputs, settings: Settings, problem: RefitProblem, est: Estimates, rw: Reweighted
) -> Verified:
    """Refit what reweighting cannot estimate, then confirm the headline (``est`` unchanged)."""
    to_refit, messages = choose_refits(est.khat_now(), inp, settings)
    refitter = Refitter(problem, settings, _checkpoint_config(inp, settings), est)
    if to_refit.size:
        method = settings.method
        refitter.run(to_refit, warm=method.refits_unreliable and _warm(method.verify, settings))
        if refitter.stopped is not None:
            messages.append(_stopped_message(refitter, to_refit, inp.factorised))
        elif not (refitter.estimates["method"] == "refit").any():
            messages.append(
                f"none of the {to_refit.size} refit(s) succeeded (see res.pointwise['status']): "
                "every epsilon is a reweighting estimate"
            )
    order = np.argsort(inp.draws, axis=1, kind="stable")

    def errors_of(e: Estimates) -> Errors:
        return pair_errors(e, inp.bins, order, settings.smoothing.weighted, inp.n_chains)

    errors = errors_of(refitter.estimates)
    n = len(inp.neighbours)
    check = Verification.off(n, settings.method.unverified)
    if refitter.stopped is not None:  # the refits asked for are not all there: no verification
        check = (
            _all_refitted(refitter.estimates)
            if not inp.factorised
            else Verification.off(n, "unverified: the refits stopped (see the warnings)")
        )
    elif settings.method.verify is not None:
        if not inp.can_refit:
            check = Verification.off(n, "unverified: no model to refit (pass model=)")
        elif not inp.factorised:
            check = _all_refitted(refitter.estimates)
        else:
            check = verify(settings.method.verify, refitter, errors)
            again = unprune(rw.reweighter, refitter.estimates, settings) if rw.pruning else None
            if again is not None:
                refitter.estimates = again
                errors = errors_of(again)
    messages += [*refitter.messages, *check.messages]
    refits = Refits(refitter.outcomes) if refitter.outcomes else None
    return Verified(refitter.estimates, check, errors, refits, tuple(messages))


def _stopped_message(refitter: Refitter, asked: np.ndarray, factorised: bool) -> str:
    """What an interruption or the time budget left of the refits ``asked``."""
    nbs, missing = refitter.problem.neighbours, np.asarray(refitter.missing, dtype=np.int64)
    ran = asked.size - missing.size
    keep = (
        "they keep their reweighted estimates"
        if factorised
        else "they are not evaluated, so epsilon is a lower bound"
    )
    return (
        f"{ran} of {asked.size} refits finished and {missing.size} did not "
        f"({_labels(nbs, missing)}): {keep}; {refitter.stopped}"
    )


def _checkpoint_config(inp: Inputs, settings: Settings) -> dict:
    """What the refits depend on, for the checkpoint (not bins or estimator: they serve all)."""
    return dict(
        settings.refit.config(),
        **settings.neighbour.fingerprint(),
        random_seed=settings.seed if settings.seed_given else None,
        labels=[str(x) for x in inp.neighbours.labels],
        var_names=list(inp.names),
    )


def _all_refitted(est: Estimates) -> Verification:
    """Without a factorised likelihood every neighbour is refitted: nothing to confirm."""
    n = est["method"].size
    check = Verification.off(n, "every neighbour refitted (method='auto')")
    done = int((est["method"] == "refit").sum())
    if done < n:
        check = check.but(
            "incomplete",
            f"incomplete: {done} of {n} neighbours refitted; epsilon is a lower bound",
        )
    return check


def verify(vopts: VerifyOptions, refitter: Refitter, errors: Errors) -> Verification:
    """Refit the worst neighbours, compare, and on disagreement refit more (worst first).

    A refit replaces the estimate it checks, and disagrees with it beyond ``z`` combined
    standard errors. After a disagreement every unchecked neighbour whose upper end, scaled
    by the largest underestimate seen, reaches the headline is refitted, in batches of
    ``top``, within ``max_refits`` and ``time_budget``.
    """
    start = time.perf_counter()
    est = refitter.estimates
    n = est["eps"].shape[0]
    check = Verification.off(n, None)
    # a refit estimated from its own draws (coupled records) takes the largest of its noisy
    # (parameter, bin) log ratios: its z is compared at the family-wise level of z over them
    raw = not refitter.problem.density_ratio
    n_pairs = int(np.sum(refitter.problem.bins.n_bins)) if raw else 0
    if n_pairs > 1:
        vopts = dataclasses.replace(vopts, z=family_z(vopts.z, n_pairs))
    eps = est.epsilon()
    eligible = np.isin(est["method"], ["psis", "moment_match"]) & np.isfinite(eps)
    if not eligible.any():
        return check.but(
            "confirmed", "confirmed: every neighbour that can set epsilon was refitted"
        )
    # a refit resolves a bin with too few (or no) draws, not a smoothing constant
    resolvable = np.isin(est["limit"], [limits.FEW_DRAWS, limits.EMPTY_BIN]).any(axis=1)
    se_before = np.where(np.isin(est["method"], ["moment_match"]), est["refit_mcse"], errors.se)
    upper = np.where(np.isnan(errors.upper), eps, errors.upper)
    cand = np.flatnonzero(eligible)
    cand = cand[np.argsort(-eps[cand], kind="stable")]
    rest = cand[vopts.top :]
    batch = np.concatenate([cand[: vopts.top], rest[resolvable[rest]]])
    batch = batch[: vopts.max_refits]
    done, factor, n_short = 0, 1.0, 0
    short = short_options(refitter.settings.refit) if vopts.early_stop else None
    warm = _warm(vopts, refitter.settings)
    left = np.array([], dtype=np.int64)
    # refits estimated from their own draws only (coupled records) are noisier than the
    # estimates they check: one that agrees confirms the estimate, which stays
    while batch.size:
        before = eps[batch].copy()
        snapshot = refitter.estimates.copy()
        try:
            full = batch
            if short is not None:
                # what sets the headline now: a short refit of it could not settle it
                lead = before >= float(np.max(refitter.estimates.epsilon()))
                first = batch[~lead]
                if first.size:
                    refitter.run(first, short)
                frac = short.draws / refitter.settings.refit.draws
                open_ = _undecided(
                    refitter.estimates, first, before[~lead], se_before[first], vopts, frac
                )
                n_short += first.size - open_.size
                full = batch[lead | np.isin(batch, open_)]
            if full.size and refitter.stopped is None:
                refitter.run(full, warm=warm)
        except RefitSetupError as err:  # before any sampling: nothing to confirm with
            return _unverified(check, f"this model cannot be refitted ({err})")
        if refitter.stopped is not None:  # interrupted, or out of time: what is there is kept
            refitter.estimates = snapshot
            return _cut_short(check, refitter, batch, done)
        done += batch.size
        factor = max(factor, _compare(check, refitter.estimates, batch, before, se_before, vopts))
        if raw:
            for k in batch[check.code[batch] == VERIFY_AGREE]:
                refitter.estimates.take_row(int(k), snapshot)
        if not (check.code == VERIFY_DISAGREE).any():
            break
        headline = float(refitter.estimates.epsilon().max())
        todo = eligible & (check.code == 0) & (upper * factor >= headline)
        left = np.flatnonzero(todo)
        left = left[np.argsort(-eps[left], kind="stable")]
        budget = vopts.max_refits - done
        late = refitter.deadline is not None and time.monotonic() > refitter.deadline
        if not left.size or budget <= 0 or late:
            break
        batch = left[: min(vopts.top, budget)]
    pending = np.flatnonzero(eligible & (check.code == 0) & resolvable)
    short_draws = short.draws if short is not None else 0
    seconds = time.perf_counter() - start
    size = refitter.full_size or refitter.settings.refit.size()
    run = _Run(vopts, done, left, pending, seconds, n_short, short_draws, n_pairs, size)
    return _verification_outcome(check, refitter.estimates, refitter.problem.neighbours, run)


#: A short verification refit's fraction of the refits' draws per chain (and its minimum).
_SHORT_FRACTION = 0.25
_SHORT_MIN_DRAWS = 100
#: Standard errors of margin by which a short refit must agree, and stay below the headline.
_SHORT_MARGIN = 2.0


def family_z(z: float, n: int) -> float:
    """The threshold holding two-sided level ``2 Phi(-z)`` over ``n`` comparisons (Bonferroni).

    Examples
    --------
    >>> from pymc_edp.auditing.verification import family_z
    >>> round(family_z(3.0, 1), 3), round(family_z(3.0, 20), 2)
    (3.0, 3.82)
    """
    from scipy.special import ndtr, ndtri

    return float(-ndtri(ndtr(-z) / n))


def short_options(refit: RefitOptions) -> RefitOptions | None:
    """Options of short verification refits (checkpointed in ``short``), or None.

    None with ``build_model`` (no model to start warm from) or too few draws to shorten.
    """
    refit = refit.for_fit()
    draws = max(_SHORT_MIN_DRAWS, int(refit.draws * _SHORT_FRACTION))
    if refit.build_model is not None or draws >= refit.draws:
        return None
    ckpt = None if refit.checkpoint is None else Path(refit.checkpoint) / "short"
    return dataclasses.replace(refit, draws=draws, checkpoint=ckpt)


def _undecided(est: Estimates, batch, before, se_before, vopts: VerifyOptions, frac: float):
    """The neighbours of ``batch`` whose short refits leave it open: refitted at full length.

    A short refit settles when ``|refit - estimate| + 2 se_refit`` is within ``z``
    :func:`_combined_se` of the estimate's and a full-length refit's (``se_refit sqrt(frac)``)
    errors, and ``refit + 2 se_refit`` is below the headline.
    """
    headline = float(np.max(est.epsilon()))
    full = []
    for k, e0, s0 in zip(batch, before, se_before, strict=True):
        refitted = est["method"][k] == "refit"
        e1 = float(np.nanmax(est["eps"][k])) if refitted else np.nan
        s1 = float(est["refit_mcse"][k]) if refitted else np.nan
        band = vopts.z * _combined_se(s0, s1 * np.sqrt(frac))
        agrees = abs(e1 - e0) + _SHORT_MARGIN * s1 <= band
        below = e1 + _SHORT_MARGIN * s1 < headline
        if not (np.isfinite(e1) and np.isfinite(s1) and agrees and below):
            full.append(k)
    return np.asarray(full, dtype=np.int64)


def _combined_se(se_estimate, se_refit) -> float:
    """``sqrt(se_estimate^2 + se_refit^2)`` (NaN as 0), at least the resolution of a log ratio.

    Exact estimates (log ratios constant over the draws, error 0) differ by rounding only:
    the floor :data:`~pymc_edp.base.limits.LOG_RATIO_RESOLUTION` keeps that from being a
    disagreement (a Monte-Carlo floor would hide real disagreements of precise estimates).
    """
    s0 = np.nan_to_num(float(se_estimate), nan=0.0, posinf=np.inf)
    s1 = np.nan_to_num(float(se_refit), nan=0.0, posinf=np.inf)
    return float(max(np.hypot(s0, s1), limits.LOG_RATIO_RESOLUTION))


def _compare(check: Verification, est: Estimates, batch, before, se_before, vopts) -> float:
    """Record the refits of ``batch`` in ``check``; the largest underestimate refit / estimate."""
    factor = 1.0
    for k, e0 in zip(batch, before, strict=True):
        check.checked[k] = e0
        if est["method"][k] != "refit":
            check.code[k] = VERIFY_FAILED
            continue
        e1 = float(np.nanmax(est["eps"][k]))
        s = _combined_se(se_before[k], est["refit_mcse"][k])
        z = (e1 - e0) / s if np.isfinite(s) else 0.0  # an error without bound: any agrees
        check.refit[k], check.z[k] = e1, z
        # even above an estimate flagged as a lower bound: a refit far from the estimate
        # says reweighting is unreliable for this model, which may hold elsewhere too
        if abs(z) > vopts.z:
            check.code[k] = VERIFY_DISAGREE
            if e0 > 0:
                factor = max(factor, e1 / e0)
        else:
            check.code[k] = VERIFY_AGREE
    return factor


@dataclass(frozen=True)
class _Run:
    """How far verification got: refits done, what the budget left, and how long it took."""

    vopts: VerifyOptions
    done: int
    left: np.ndarray  # unchecked neighbours that could still set epsilon
    pending: np.ndarray  # estimates at a limit a refit would resolve, left unrefitted
    seconds: float
    n_short: int = 0  # refits that stopped early: their comparison was settled
    short_draws: int = 0
    n_pairs: int = 0  # raw refits: the (parameter, bin) pairs their maximum is taken over
    size: str = ""  # what each refit sampled (RefitOptions.size)

    def short(self) -> str:
        """How many refits stopped early, for the note ("" for none)."""
        if not self.n_short:
            return ""
        return (
            f"; {self.n_short} settled by short refits of {self.short_draws} draws per chain, "
            "warm-started"
        )

    def threshold(self) -> str:
        """The z threshold, and why it is above the options' for raw refits."""
        if not self.n_pairs:
            return f"threshold {self.vopts.z:g}"
        return (
            f"threshold {self.vopts.z:.2f}: the same level over the {self.n_pairs} (parameter, "
            "bin) pairs whose largest log ratio a refit estimated from its own draws takes"
        )

    def budget(self) -> str:
        v = self.vopts
        return f"VerifyOptions(max_refits={v.max_refits}, time_budget={v.time_budget})"


def _verification_outcome(check: Verification, est: Estimates, nbs, run: _Run) -> Verification:
    """Status, note and warnings; leftovers flagged as lower bounds in ``est`` (the refitter's)."""
    ok, bad = check.code == VERIFY_AGREE, check.code == VERIFY_DISAGREE
    failed = check.code == VERIFY_FAILED
    checked = int(ok.sum() + bad.sum())
    if not checked:
        return _unverified(check, f"every verification refit failed{_SEE_STATUS}")
    top = int(np.argmax(est.epsilon()))
    if not bad.any() and failed[top]:  # the refits that ran agree, but not the headline's
        return _unverified(
            check,
            f"the refit of neighbour {nbs.labels[top]}, whose estimate sets epsilon, failed "
            f"({checked} other verification refit(s) agree){_SEE_STATUS}",
        )
    if not bad.any():
        return _agreement(check, nbs, run, checked, int(failed.sum()))
    worst = np.flatnonzero(bad)[np.argmax(np.abs(check.z[bad]))]
    detail = (
        f"{int(bad.sum())} of {checked} refitted neighbours disagree with their estimates "
        f"(worst: {nbs.labels[worst]}, {check.checked[worst]:.3f} estimated vs "
        f"{check.refit[worst]:.3f} refitted, z = {check.z[worst]:.1f})"
    )
    each = f" ({run.size} each)" if run.size else ""
    refitted = (
        f"verification refitted {run.done} neighbours{each}, worst first, and uses their values"
    )
    if run.left.size:
        for k in run.left:  # could still set epsilon: their estimates are lower bounds
            p = int(np.nanargmax(np.nan_to_num(est["eps"][k], nan=-np.inf)))
            if est["limit"][k, p] == limits.NONE:
                est["limit"][k, p] = limits.UNVERIFIED
        note = (
            f"reweighting is unreliable for this model: {detail}; {refitted}, but its budget "
            f"({run.budget()}) left {run.left.size} more that could still set epsilon, so "
            "epsilon is a lower bound"
        )
        return check.but("incomplete", note, f"R{note[1:]}. {_RAISE_BUDGET}")
    return check.but(
        "corrected",
        f"corrected by refits: {detail}; {refitted}, until no other could reach epsilon"
        f"{run.short()}",
        f"Reweighting is unreliable for this model: {detail}; {refitted}.",
    )


def _cut_short(check: Verification, refitter: Refitter, batch: np.ndarray, done: int):
    """Unverified: an interruption or the budget stopped a batch; its refits are not used.

    The note names the refits that finished (kept in ``res.refits``) and those missing.
    """
    nbs = refitter.problem.neighbours
    # not refitted in this batch: interrupted, not started, or waiting for its full length
    gone = ~np.isin(batch, np.fromiter(refitter.outcomes, dtype=np.int64))
    missing, ran = batch[gone], batch[~gone]
    reason = (
        f"verification stopped after {done + ran.size} refit(s): of the last {batch.size}, "
        f"{ran.size} finished ({_labels(nbs, ran) or 'none'}) and {missing.size} did not "
        f"({_labels(nbs, missing)}); {refitter.stopped}"
    )
    return check.but(
        "unverified",
        f"unverified: {reason}",
        f"the headline is unverified, epsilon rests on reweighting alone: {reason}",
    )


def _unverified(check: Verification, reason: str) -> Verification:
    """``check`` unverified for ``reason``, and the warning that epsilon rests on reweighting."""
    return check.but(
        "unverified",
        f"unverified: {reason}",
        f"the headline could not be confirmed by refits: {reason}; epsilon rests on reweighting "
        "alone",
    )


def _agreement(check: Verification, nbs, run: _Run, checked: int, n_failed: int):
    """Every refit agreed: confirmed, or incomplete when the budget left lower bounds."""
    ok_or_bad = np.isin(check.code, [VERIFY_AGREE, VERIFY_DISAGREE])
    zmax = float(np.nanmax(np.abs(check.z[ok_or_bad])))
    agree = (
        f"refitting the {checked} worst neighbours: their refits agree with the estimates "
        f"within Monte-Carlo error (largest |z| = {zmax:.1f}, {run.threshold()}; "
        f"{run.size}{', ' if run.size else ''}{run.seconds:.1f} s{run.short()})"
    )
    pending = run.pending
    if pending.size:  # lower bounds the budget left: nothing confirms them
        out = check.but(
            "incomplete",
            f"incomplete: checked by {agree}, but the budget left {pending.size} lower bounds "
            "(too few draws in a bin) unrefitted, so epsilon is a lower bound",
            f"The verification budget ({run.budget()}) left {pending.size} neighbour(s) whose "
            f"estimates are lower bounds unrefitted ({_labels(nbs, pending, 5)}): epsilon is "
            f"a lower bound. {_RAISE_BUDGET}",
        )
    else:
        out = check.but("confirmed", f"confirmed by {agree}")
    if n_failed:
        out = out.but(out.status, out.note + f"; {n_failed} refit(s) failed")
    return out
