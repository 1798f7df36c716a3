"""Helpers the benchmarks share: the stack's versions, its own PSIS, and setting a group.

They are references and set-up code for the benchmarks only, not part of ``pymc_edp``. The
benchmarks run as scripts, so this folder is on ``sys.path`` and ``from stack import ...``
finds this module.
"""

from __future__ import annotations

import json
import subprocess
from importlib.metadata import PackageNotFoundError, version

import numpy as np
import xarray as xr

from pymc_edp.model.compat import ARVIZ_1, has_group, import_arviz


def stack_versions() -> dict[str, str]:
    """Installed versions of the PyMC stack (``"-"`` where not installed), for the logs."""
    out = {}
    for pkg in ("pymc", "pytensor", "arviz", "xarray", "numpy"):
        try:
            out[pkg] = version(pkg)
        except PackageNotFoundError:
            out[pkg] = "-"
    return out


def run_json(cmd: list[str], env: dict, name: str) -> dict:
    """The last JSON line ``cmd`` prints, or ``{"model": name, "error": ...}`` if it failed."""
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    lines = [line for line in proc.stdout.splitlines() if line.startswith("{")]
    if proc.returncode or not lines:
        return {"model": name, "error": (proc.stderr.strip().splitlines() or ["?"])[-1][:120]}
    return json.loads(lines[-1])


def refits_by_draws(res) -> str:
    """An audit's refits by draws per chain, e.g. ``4x250 1x1000`` ("-" without refits).

    Short verification refits have a quarter of the fit's draws; since issue 40 refits are
    sized from the fit.
    """
    if res.refits is None or not len(res.refits):
        return "-"
    counts: dict[int, int] = {}
    for out in res.refits._outcomes.values():
        if out.posterior is not None:
            d = int(out.posterior.sizes["draw"])
            counts[d] = counts.get(d, 0) + 1
    return " ".join(f"{counts[d]}x{d}" for d in sorted(counts)) or "-"


def format_table(head: list[str], body: list[list[str]], markdown: bool) -> list[str]:
    """Lines of a Markdown table, or of one aligned in columns."""
    if markdown:
        lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
        return lines + ["| " + " | ".join(b) + " |" for b in body]
    width = [max(len(h), *(len(b[i]) for b in body)) for i, h in enumerate(head)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(head, width, strict=True))]
    return lines + ["  ".join(c.ljust(w) for c, w in zip(b, width, strict=True)) for b in body]


def stack_psislw(log_weights: np.ndarray, reff: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The stack's own PSIS of rows of log weights (sample axis last), normalised.

    ``arviz.psislw`` on ArviZ 0.23; arviz_stats' ``psislw`` accessor on ArviZ 1.x (which
    takes log-likelihood values, the negated log weights).
    """
    lw = np.asarray(log_weights, dtype=float)
    if ARVIZ_1:
        import arviz_stats  # noqa: F401 - registers the ``azstats`` accessor

        dims = [f"dim_{i}" for i in range(lw.ndim - 1)] + ["__sample__"]
        smoothed, khat = xr.DataArray(-lw, dims=dims).azstats.psislw(r_eff=reff, dim="__sample__")
        return np.asarray(smoothed), np.asarray(khat)
    smoothed, khat = import_arviz().psislw(lw.copy(), reff=reff)
    return np.asarray(smoothed), np.asarray(khat)


def set_group(data, name: str, dataset: xr.Dataset) -> None:
    """Put ``dataset`` into ``data`` as group ``name`` (replacing it if present), in place."""
    if isinstance(data, xr.DataTree):
        data[name] = xr.DataTree(dataset)
    elif has_group(data, name):
        setattr(data, name, dataset)
    else:
        data.add_groups({name: dataset})
