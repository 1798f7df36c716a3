"""The ``pymc-edp`` command line: ``pymc-edp demo`` audits a survival model of real patients.

The demo's help (``_DEMO_DESCRIPTION``) says what it fits, prints and writes.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import tempfile
import time
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import TextIO

import numpy as np
import pandas as pd

__all__ = ["build_parser", "fit_demo_model", "main"]

RESULT_FILENAME = "heart_transplant_edp.nc"
FIGURE_FILENAME = "heart_transplant_epsilon.png"
DEFAULT_SEED = 1976

_DEMO_DESCRIPTION = """\
Audit a real, sensitive posterior end to end.

Fits a censored Weibull survival regression (log scale linear in standardised age) to the
Stanford heart-transplant data shipped with pymc_edp (69 patients, Miller 1976; see
pymc_edp/datasets/heart_transplant.md), then asks how far the posterior of each parameter
would move if one patient's record were removed: its B-EDP epsilon (Abowd, Schneider &
Vilhuber 2013; Charest & Han 2017).

Prints the audit table and the most exposed patients, and writes to --output:
  heart_transplant_edp.nc       the audit result (pymc_edp.EDPResult.from_netcdf reads it)
  heart_transplant_epsilon.png  per-patient epsilon coloured by k-hat (needs matplotlib)
"""

_DEMO_EPILOG = """\
Neighbours remove one patient (unbounded DP): replacing a censored (time, censoring) record
is not a well-defined neighbour.

EDP measures the sensitivity of this posterior to one record; it is not a differential-privacy
guarantee. Epsilon grows with --bins: always report B with it.

Example:
  pymc-edp demo --output demo_out
  pymc-edp demo --draws 500 --bins 10 --no-plot --no-progress
"""


DEFAULT_OUTPUT = "pymc_edp_demo"


#: Largest --seed: the samplers take 32-bit seeds (NumPy's legacy generators refuse more).
MAX_SEED = 2**32 - 1


def _integer(low: int, high: int | None = None, why: str = ""):
    """An argparse type: an integer in ``[low, high]``, refused with ``why`` when out of it."""
    expected = f"an integer >= {low}" if high is None else f"an integer from {low} to {high}"

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}") from None
        if value < low or (high is not None and value > high):
            raise argparse.ArgumentTypeError(f"{why or 'expected ' + expected}, got {value}")
        return value

    return parse


_positive_int = _integer(1)
_nonnegative_int = _integer(0)
_bins = _integer(
    2, why="B must be at least 2 (one bin holds all the probability: epsilon would be 0)"
)
_seed = _integer(0, MAX_SEED, why=f"a seed must be an integer from 0 to {MAX_SEED} (2**32 - 1)")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser of the ``pymc-edp`` command (its ``demo`` subcommand).

    Examples
    --------
    >>> from pymc_edp.cli import build_parser
    >>> args = build_parser().parse_args(["demo", "--draws", "500", "--no-plot"])
    >>> args.command, args.draws, args.tune, args.bins, args.method, args.no_plot
    ('demo', 500, None, 20, 'auto', True)
    """
    from pymc_edp import __version__

    parser = argparse.ArgumentParser(
        prog="pymc-edp",
        description=(
            "Empirical differential privacy (EDP) audits of PyMC posteriors: if one record "
            "were removed or changed, how far would the posterior move?"
        ),
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = sub.add_parser(
        "demo",
        help="fit and audit a survival model of real heart-transplant patients",
        description=_DEMO_DESCRIPTION,
        epilog=_DEMO_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    group = demo.add_argument_group("sampling")
    for flag, parse, default, text in (
        ("--draws", _positive_int, 1000, "posterior draws per chain (default: %(default)s)"),
        ("--tune", _nonnegative_int, None, "warm-up iterations per chain (default: as --draws)"),
        ("--chains", _positive_int, 2, "MCMC chains (default: %(default)s)"),
    ):
        group.add_argument(flag, type=parse, default=default, metavar="N", help=text)
    group.add_argument(
        "--seed",
        type=_seed,
        default=DEFAULT_SEED,
        help="random seed of the fit and of any refits (default: %(default)s)",
    )
    group.add_argument(
        "--sampler",
        choices=("auto", "nutpie", "pymc"),
        default="auto",
        help="NUTS implementation; 'auto' uses nutpie when installed (default: %(default)s)",
    )
    group = demo.add_argument_group("audit")
    group.add_argument(
        "--bins",
        type=_bins,
        default=20,
        metavar="B",
        help="number of equal-probability bins B per parameter (default: %(default)s)",
    )
    group.add_argument(
        "--method",
        choices=("auto", "psis", "refit"),
        default="auto",
        help=(
            "how neighbour posteriors are obtained: 'psis' reweights the draws only, 'auto' "
            "also refits the patients whose Pareto k-hat is above the threshold and confirms "
            "epsilon by refitting the 5 worst patients, 'refit' refits every patient (69 "
            "fits) (default: %(default)s)"
        ),
    )
    group.add_argument(
        "--no-verify", action="store_true", help="skip --method auto's confirming refits"
    )
    group = demo.add_argument_group("output")
    group.add_argument(
        "--top",
        type=_nonnegative_int,
        default=5,
        metavar="K",
        help="number of most exposed patients to list and label (default: %(default)s)",
    )
    group.add_argument(
        "--output",
        type=Path,
        default=Path(DEFAULT_OUTPUT),
        metavar="DIR",
        help=(
            f"folder for {RESULT_FILENAME} and {FIGURE_FILENAME}; created if missing "
            "(default: %(default)s)"
        ),
    )
    group.add_argument("--no-plot", action="store_true", help=f"do not write {FIGURE_FILENAME}")
    group.add_argument(
        "--no-progress", action="store_true", help="hide the sampling and audit progress bars"
    )
    demo.set_defaults(handler=_run_demo)
    return parser


def _matplotlib_available() -> bool:
    return importlib.util.find_spec("matplotlib") is not None


def fit_demo_model(
    df: pd.DataFrame | None = None,
    *,
    draws: int = 1000,
    tune: int | None = None,
    chains: int = 2,
    random_seed: int | None = DEFAULT_SEED,
    sampler: str = "auto",
    progressbar: bool = True,
):
    """Build and sample the demo model; ``(model, idata, sampler used)``.

    ``df`` defaults to :func:`pymc_edp.datasets.load_heart_transplant`, ``tune`` to
    ``draws``; ``sampler="auto"`` uses nutpie when installed. ``idata`` has a
    ``log_likelihood["survival"]`` per patient.

    Examples
    --------
    Arguments are checked before sampling (which is not run here):

    >>> from pymc_edp.cli import fit_demo_model
    >>> fit_demo_model(sampler="stan")
    Traceback (most recent call last):
        ...
    ValueError: sampler must be 'auto', 'nutpie' or 'pymc', not 'stan'
    >>> model, idata, sampler = fit_demo_model(draws=200, progressbar=False)  # doctest: +SKIP
    >>> idata.log_likelihood["survival"].sizes["patient"]  # doctest: +SKIP
    69
    """
    import pymc as pm

    from pymc_edp.datasets import heart_transplant_model, load_heart_transplant

    if df is None:
        df = load_heart_transplant()
    has_nutpie = importlib.util.find_spec("nutpie") is not None
    if sampler == "auto":
        sampler = "nutpie" if has_nutpie else "pymc"
    if sampler == "nutpie" and not has_nutpie:
        raise ImportError('sampler="nutpie" needs nutpie: pip install "pymc-edp[refit]"')
    if sampler not in ("nutpie", "pymc"):
        raise ValueError(f"sampler must be 'auto', 'nutpie' or 'pymc', not {sampler!r}")

    model = heart_transplant_model(df)
    with model:
        idata = pm.sample(
            draws=draws,
            tune=draws if tune is None else tune,
            chains=chains,
            nuts_sampler=sampler,
            random_seed=random_seed,
            progressbar=progressbar,
        )
        pm.compute_log_likelihood(idata, model=model, progressbar=progressbar)
    ll = idata.log_likelihood["survival"]
    if ll.sizes.get("patient") != len(df) or not np.array_equal(
        ll["patient"].values, df["patient"].to_numpy()
    ):
        raise RuntimeError(
            "the log_likelihood group does not have one value per patient: "
            f"dims {dict(ll.sizes)}, expected patient = {len(df)}"
        )
    return model, idata, sampler


def _posterior_line(idata, names: Sequence[str]) -> str:
    post = idata.posterior
    parts = [f"{n} {float(post[n].mean()):.3f} (sd {float(post[n].std()):.3f})" for n in names]
    return "Posterior mean (sd): " + ", ".join(parts)


def _exposed_table(res, df: pd.DataFrame, k: int) -> pd.DataFrame:
    top = res.most_exposed(k)
    data = df.set_index("patient")
    ids = top.index.to_numpy()
    table = pd.DataFrame(
        {
            "patient": ids,
            "epsilon": top["epsilon"].to_numpy(),
            "pareto_k": top["pareto_k"].to_numpy(),
            "worst_parameter": top["worst_parameter"].to_numpy(),
            "age": data.loc[ids, "age"].to_numpy(),
            "survival_days": data.loc[ids, "survival"].to_numpy(),
            "censored": np.where(data.loc[ids, "censored"].to_numpy() == 1, "yes", "no"),
        }
    )
    if "method" in res.pointwise:
        table["method"] = res.pointwise["method"].sel(neighbour=ids).values.astype(str)
    return table


def _reading(res, df: pd.DataFrame, head) -> str:
    """One plain-language sentence about the worst neighbour."""
    from pymc_edp.report import format_interval

    pid = res.worst_neighbour
    row = df.set_index("patient").loc[pid]
    param = str(res.pointwise["worst_parameter"].sel(neighbour=pid).values)
    status = "censored at" if row["censored"] == 1 else "died after"
    text = (
        f"Reading: removing patient {pid} (age {row['age']:.1f}, {status} "
        f"{int(row['survival'])} days) changes the posterior probability of one of the "
        f"{res.bins} equal-probability bins of {param} by a factor of up to "
        f"e^{res.epsilon:.3f} = {np.exp(res.epsilon):.2f}"
    )
    if head.interval is not None:
        text += f" (90% Monte-Carlo interval of epsilon: {format_interval(head.interval)})"
    if head.lower_bound:
        text += "; epsilon is a lower bound (see the notes above)"
    return text + "."


def _save_figure(res, path: Path, top: int) -> None:
    from matplotlib.figure import Figure

    from pymc_edp.plots import plot_pointwise_epsilon

    fig = Figure(figsize=(9.0, 4.4), layout="constrained")
    plot_pointwise_epsilon(
        res,
        ax=fig.add_subplot(),
        labels=top,
        xlabel="patient id",
        title=(
            "Heart-transplant survival model: ε when one patient is removed "
            f"(B = {res.bins}, max ε = {res.epsilon:.2f})"
        ),
    )
    fig.savefig(path, dpi=120)


def _run_demo(args: argparse.Namespace, out: TextIO) -> int:
    """``pymc-edp demo``: fit, audit, print to ``out`` and save; the exit status."""
    from pymc_edp.datasets import load_heart_transplant
    from pymc_edp.report import headline

    def say(text: str = "") -> None:
        out.write(text + "\n")
        out.flush()

    df = load_heart_transplant()
    n_cens = int(df["censored"].sum())
    say(
        f"pymc-edp demo: Stanford heart-transplant survival data, {len(df)} patients "
        f"({len(df) - n_cens} deaths, {n_cens} censored)"
    )
    say("Model: Weibull survival time, right-censored, log scale linear in standardised age")
    res, seconds = _audit_demo(args, df, say)
    head = headline(res)
    say(f"Audited {res.n_neighbours} neighbours in {seconds:.1f} s\n")
    say(f"{res!r}\n")
    say(f"{_reading(res, df, head)}\n")
    if args.top > 0:
        table = _exposed_table(res, df, args.top)
        say(f"The {len(table)} most exposed patients (largest epsilon when removed):")
        formats = {"epsilon": "{:.3f}", "pareto_k": "{:.3f}", "age": "{:.1f}"}
        formatters = {column: spec.format for column, spec in formats.items()}
        say(table.to_string(index=False, formatters=formatters))
        say("")
    return _write_demo(args, res, say)


def _audit_demo(args: argparse.Namespace, df: pd.DataFrame, say):
    """Fit the demo model (saying how) and audit it; the result and the audit's seconds."""
    import pymc_edp as edp
    from pymc_edp.base.common import EDPWarning

    progress = not args.no_progress
    start = time.perf_counter()
    model, idata, sampler = fit_demo_model(
        df,
        draws=args.draws,
        tune=args.tune,
        chains=args.chains,
        random_seed=args.seed,
        sampler=args.sampler,
        progressbar=progress,
    )
    var_names = [rv.name for rv in model.free_RVs]
    tune = args.draws if args.tune is None else args.tune
    say(
        f"Sampled with {sampler}: {args.chains} chains x {args.draws} draws ({tune} tuning), "
        f"seed {args.seed}, in {time.perf_counter() - start:.1f} s"
    )
    say(_posterior_line(idata, var_names))
    refit = edp.RefitOptions(draws=args.draws, tune=tune, chains=args.chains, engine=sampler)
    method = edp.Auto(verify=False) if args.no_verify and args.method == "auto" else args.method
    start = time.perf_counter()
    with warnings.catch_warnings():
        # the result keeps its diagnostics (res.warnings) and prints them with the table
        warnings.simplefilter("ignore", EDPWarning)
        res = edp.audit(
            idata,
            model,
            var_names=var_names,
            bins=args.bins,
            method=method,
            neighbour="remove",
            refit=refit,
            random_seed=args.seed,
            progressbar=progress,
        )
    return res, time.perf_counter() - start


def _write_demo(args: argparse.Namespace, res, say) -> int:
    """Write the result (and the figure) under ``args.output``; the exit status."""
    written = []
    result_path = args.output / RESULT_FILENAME
    try:
        args.output.mkdir(parents=True, exist_ok=True)
        res.to_netcdf(result_path)
    except OSError as err:  # checked before sampling, but a disk can fill: keep the result
        fallback = Path(tempfile.mkdtemp(prefix="pymc_edp_demo_")) / RESULT_FILENAME
        res.to_netcdf(fallback)
        say(f"Could not write into {args.output} ({err}); the result is saved as {fallback}")
        return 1
    written.append(("result", result_path))
    if args.no_plot:
        pass
    elif not _matplotlib_available():
        say('No figure: matplotlib is not installed (pip install "pymc-edp[plots]").')
    else:
        figure_path = args.output / FIGURE_FILENAME
        _save_figure(res, figure_path, args.top)
        written.append(("figure", figure_path))
    say("Wrote:")
    for what, path in written:
        say(f"  {what:<7}{path.resolve()}")
    return 0


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``pymc-edp`` command line on ``argv`` (default ``sys.argv[1:]``); the exit status.

    Examples
    --------
    Without a command the help goes to standard error (status 2):

    >>> from pymc_edp.cli import main
    >>> main([])
    2
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    if getattr(args, "handler", None) is None:
        parser.print_help(sys.stderr)
        return 2
    if args.command == "demo":
        problem = check_demo_args(args)
        if problem:
            parser.error(problem)  # exit status 2, before anything is sampled
    return args.handler(args, sys.stdout)


def check_demo_args(args: argparse.Namespace) -> str | None:
    """What is wrong with the demo's options, or None: checked before any sampling."""
    from pymc_edp.base.common import MIN_DRAWS_PER_BIN

    total = args.draws * args.chains
    need = MIN_DRAWS_PER_BIN * args.bins
    if total < need:
        per_chain = -(-need // args.chains)
        return (
            f"--draws {args.draws} x --chains {args.chains} gives {total} posterior draws; "
            f"B = {args.bins} bins need at least {need} ({MIN_DRAWS_PER_BIN} per bin): use "
            f"--draws {per_chain} or more, or fewer --bins"
        )
    return _output_problem(args.output)


def _output_problem(folder: Path) -> str | None:
    """Why the results could not be written into ``folder`` (created if missing), or None."""
    folder = Path(folder)
    if folder.exists() and not folder.is_dir():
        return f"--output {folder} is a file, not a folder: name a folder for the results"
    existing = folder
    while not existing.exists():  # the nearest folder that exists must let us create it
        existing = existing.parent
    if not existing.is_dir():
        return f"--output {folder}: {existing} is a file, not a folder"
    try:
        with tempfile.TemporaryFile(dir=existing):
            pass
    except OSError as err:
        return f"--output {folder}: cannot write into {existing} ({err.strerror or err})"
    for name in (RESULT_FILENAME, FIGURE_FILENAME):
        path = folder / name
        if path.exists() and (path.is_dir() or not os.access(path, os.W_OK)):
            return f"--output {folder}: {path} exists and cannot be overwritten"
    return None


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
