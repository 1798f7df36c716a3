"""What a refit produced: its seed, its outcome, and the collection of refitted posteriors."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.model.compat import make_container

__all__ = ["RefitOutcome", "RefitTask", "Refits", "refit_seed"]


def refit_seed(random_seed: int, index: int) -> int:
    """Seed of refit ``index`` from the audit's ``random_seed``, whatever the order of refits.

    Examples
    --------
    >>> from pymc_edp.refit import refit_seed
    >>> refit_seed(1, 0), refit_seed(1, 1)
    (1835504127, 1189033389)
    """
    return int(np.random.SeedSequence([int(random_seed), int(index)]).generate_state(1)[0])


@dataclass(frozen=True)
class RefitTask:
    """One refit to run: neighbour ``index`` (``label``), its data and its seed.

    ``data`` may be a callable, expanded when the refit runs; a checkpoint reuses a saved
    refit only if its ``fingerprint`` (:mod:`pymc_edp.refit.fingerprint`) is this one.

    Examples
    --------
    >>> from pymc_edp.refit import RefitTask, refit_seed
    >>> task = RefitTask(3, "school C", {"edp_dw_y": [0.0, -1.0]}, refit_seed(7, 3))
    >>> task.index, task.label, task.seed == refit_seed(7, 3)
    (3, 'school C', True)
    """

    index: int
    label: object
    data: object
    seed: int
    fingerprint: dict | None = None


@dataclass(frozen=True)
class RefitOutcome:
    """What became of one refit.

    Examples
    --------
    >>> from pymc_edp.refit import RefitOutcome, refit_seed
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    >>> out = RefitOutcome(0, "a", "ok", "", refit_seed(1, 0), 0.5, post)
    >>> out.status, out.seed, dict(out.posterior.sizes)
    ('ok', 1835504127, {'chain': 1, 'draw': 4})
    """

    index: int
    label: object
    status: str  # "ok", "diverged", "error"
    reason: str
    seed: int
    seconds: float
    posterior: xr.Dataset | None


def jsonable(x):
    """``x`` as a JSON scalar: numpy scalars unwrapped, anything else not a scalar as ``str``."""
    if isinstance(x, np.generic):
        return x.item()
    return x if isinstance(x, int | float | str | bool) or x is None else str(x)


class Refits(Mapping):
    """Refitted neighbour posteriors, indexed by neighbour label (``res.refits``).

    ``refits[label]`` is the stack's container with the refit's posterior; :attr:`status`
    tabulates every refit's status, reason, seed and time.

    Examples
    --------
    >>> from pymc_edp.refit import RefitOutcome, Refits
    >>> post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    >>> refits = Refits({
    ...     0: RefitOutcome(0, "a", "ok", "", 11, 0.5, post),
    ...     1: RefitOutcome(1, "b", "error", "ValueError: boom", 12, 0.1, None),
    ... })
    >>> refits
    Refits(2 neighbours: {'ok': 1, 'error': 1})
    >>> refits.status["status"].to_dict()
    {'a': 'ok', 'b': 'error'}
    >>> refits["b"]
    Traceback (most recent call last):
        ...
    KeyError: "refit of 'b' failed: ValueError: boom"
    """

    def __init__(self, outcomes: dict[int, RefitOutcome]):
        self._outcomes = dict(sorted(outcomes.items()))
        self._by_label = {o.label: o for o in self._outcomes.values()}

    def __getitem__(self, label):
        out = self._by_label[label]
        if out.posterior is None:
            raise KeyError(f"refit of {label!r} failed: {out.reason}")
        return make_container({"posterior": out.posterior})

    def __iter__(self) -> Iterator:
        return iter(self._by_label)

    def __len__(self) -> int:
        return len(self._by_label)

    @property
    def status(self):
        """A :class:`pandas.DataFrame` of status, reason, seed and seconds per refit."""
        import pandas as pd

        fields = ("status", "reason", "seed", "seconds")
        rows = [
            {"neighbour": o.label, **{f: getattr(o, f) for f in fields}}
            for o in self._outcomes.values()
        ]
        return pd.DataFrame(rows).set_index("neighbour") if rows else pd.DataFrame()

    def __repr__(self) -> str:
        counts = self.status["status"].value_counts().to_dict() if len(self) else {}
        return f"Refits({len(self)} neighbours: {counts})"
