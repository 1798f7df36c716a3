"""The model's side of a synthetic release: its outputs, their density, and their sampling.

A synthetic dataset of ``size`` records is drawn from the posterior predictive of one
observed variable; record ``j`` takes the per-record inputs (covariates, group labels) of
record ``j mod n``. Its density is the model's own observation density at every draw.
"""

from __future__ import annotations

import numpy as np
import xarray as xr

from pymc_edp.model.compat import graph_ancestors
from pymc_edp.model.pymc import elementwise_loglik, observed_values

__all__ = ["SyntheticData", "discrete_support", "observed_name", "posterior_subset"]

#: Likelihoods whose records take finitely many values, and how to list them.
_FINITE = {"bernoulli": "binary", "binomial": "binomial", "categorical": "categorical"}


def observed_name(model, observed: str | None) -> str:
    """The observed variable a synthetic release draws from, checked."""
    names = [rv.name for rv in model.observed_RVs]
    if observed is None:
        if len(names) != 1:
            raise ValueError(
                f"the model has observed variables {names}: say which one the synthetic "
                "release draws (observed='name')"
            )
        return names[0]
    if observed not in names:
        raise ValueError(f"observed={observed!r} is not an observed variable of the model {names}")
    return observed


def discrete_support(model, name: str) -> np.ndarray | None:
    """The values of a Bernoulli, Binomial (constant n) or Categorical record, else None."""
    rv = model[name]
    op = getattr(rv.owner, "op", None)
    kind = _FINITE.get(str(getattr(op, "name", "")).lower())
    if kind == "binary":
        return np.array([0, 1])
    params = rv.owner.inputs[2:] if rv.owner is not None else []
    if kind == "binomial" and params:
        n = _constant(params[0])
        if n is not None and np.unique(n).size == 1:
            return np.arange(int(np.unique(n)[0]) + 1)
    if kind == "categorical" and params:
        p = _constant(params[-1])
        if p is not None:
            return np.arange(p.shape[-1])
    return None


def _constant(var) -> np.ndarray | None:
    """The value of a graph that depends on no variable, else None."""
    if any(v.owner is None and not hasattr(v, "data") for v in graph_ancestors([var])):
        return None
    try:
        return np.asarray(var.eval())
    except Exception:  # pragma: no cover - depends on the graph
        return None


def posterior_subset(posterior: xr.Dataset, index: np.ndarray) -> xr.Dataset:
    """Draws ``index`` (flattened chain-major, as everywhere in the package) as one chain."""
    out = {}
    for name, da in posterior.data_vars.items():
        extra = [d for d in da.dims if d not in ("chain", "draw")]
        arr = np.asarray(da.transpose("chain", "draw", *extra).values)
        arr = arr.reshape(-1, *arr.shape[2:])[np.asarray(index)]
        out[name] = (("chain", "draw", *extra), arr[None])
    coords = {d: posterior.coords[d].values for d in posterior.dims if d in posterior.coords}
    coords.pop("chain", None)
    coords.pop("draw", None)
    return xr.Dataset(out, coords={**coords, "chain": [0], "draw": np.arange(len(index))})


class SyntheticData:
    """Synthetic datasets of ``size`` records (default ``n``) of ``name``, and their density."""

    def __init__(self, model, name: str, posterior: xr.Dataset, size: int | None = None):
        self.model, self.name, self.posterior = model, name, posterior
        self.observed = observed_values(None, model, name)
        self.n = int(self.observed.shape[0]) if self.observed.ndim else 1
        self.size = self.n if size is None else int(size)
        if self.observed.ndim != 1 and self.size != self.n:
            raise ValueError(
                f"{name!r} has shape {self.observed.shape}: a synthetic release of another "
                f"size than its {self.n} records needs one-dimensional records; leave size= "
                "out"
            )
        self.blocks = -(-self.size // self.n)
        self.n_samples = posterior.sizes["chain"] * posterior.sizes["draw"]
        self._fn = elementwise_loglik(model, name)
        if self._fn.coupled:
            raise ValueError(
                f"the likelihood of {name!r} couples its records (one term over all of them): "
                "a synthetic dataset's density is not a product over its records, which this "
                "release audit needs. Audit the posterior draws instead (release='draws')."
            )

    def record_terms(self, y: np.ndarray) -> np.ndarray:
        """``log p(y_j | theta_s)``, shape (S, n), of one block of ``n`` records at every draw."""
        out = self._fn(self.posterior, y)
        return out.reshape(out.shape[0], self.n, -1).sum(axis=2)

    def log_density(self, blocks: np.ndarray) -> np.ndarray:
        """``log p(y | theta_s)`` (S,) of the first ``size`` records of ``blocks``."""
        total = 0.0
        left = self.size
        for b in range(self.blocks):
            terms = self.record_terms(blocks[b])
            total = total + terms[:, : min(left, self.n)].sum(axis=1)
            left -= self.n
        return total

    def sample(self, draw_index: np.ndarray, seed: int) -> np.ndarray:
        """One synthetic dataset per draw in ``draw_index``, as blocks ``(T, blocks, n, ...)``."""
        import pymc as pm

        sub = posterior_subset(self.posterior, draw_index)
        seeds = np.random.default_rng(seed).integers(0, 2**31 - 1, size=self.blocks)
        out = []
        for b in range(self.blocks):
            pp = pm.sample_posterior_predictive(
                sub,
                model=self.model,
                var_names=[self.name],
                random_seed=int(seeds[b]),
                progressbar=False,
                return_inferencedata=False,
            )
            out.append(np.asarray(pp[self.name])[0])
        return np.stack(out, axis=1)

    def enumerate_outputs(self, support: np.ndarray, limit: int) -> np.ndarray | None:
        """Every dataset of ``size`` records over ``support``, or None above ``limit`` of them."""
        if self.observed.ndim != 1 or len(support) ** self.size > limit:
            return None
        grids = np.meshgrid(*([np.arange(len(support))] * self.size), indexing="ij")
        return np.stack([g.ravel() for g in grids], axis=1)  # (O, size) indices into support

    def enumerated_log_density(self, support: np.ndarray, outputs: np.ndarray) -> np.ndarray:
        """``log p(o | theta_s)`` (O, S) of every listed output, from one evaluation per value."""
        dtype = self.observed.dtype
        table = np.stack(
            [self.record_terms(np.full(self.observed.shape, v, dtype=dtype)) for v in support]
        )  # (V, S, n)
        acc = np.zeros((outputs.shape[0], table.shape[1]))
        for j in range(self.size):
            acc += table[outputs[:, j], :, j % self.n]
        return acc
