"""Leave-one-out conditionals of a coupled likelihood, by the route the model allows.

When a likelihood couples its records (:mod:`pymc_edp.model.structure`), a neighbour
posterior still reweights the full-data draws, by ``p(y_r | y_-r, theta)`` for record ``r``
[1]_. :class:`CoupledLikelihood` computes it from ``f(y) = log p(y | theta)``, the sum of
every log-density term that reads the values, by the first route that is exact for the model:

``student_t``
    ``pm.MvStudentT``: closed form (:func:`~pymc_edp.model.conditional.student_t_conditional`).
``gaussian``
    ``f`` is proven a quadratic form in ``y`` from the graph
    (:func:`~pymc_edp.model.structure.quadratic_in_values`): the Gaussian conditional from its
    gradient and Hessian.
``gaussian (checked)``
    ``f`` is not proven quadratic (a ``scan``-built Kalman filter), but is found exactly
    quadratic along every record's direction, to :data:`QUADRATIC_ATOL` nats, at
    :data:`CHECK_DRAWS` posterior draws spread over the chains and at the draws where each
    parameter is smallest and largest, each at ``+-0.5``, ``+-1.5``, ``+-3`` and ``+-6``
    conditional standard deviations; and at every draw the curvature from steps of two
    sizes agrees. Conditionals from central differences, exact for a quadratic.
``quadrature``
    Any other continuous likelihood: ``log p(y_r | y_-r) = f(y) - log integral of
    exp(f(y with y_r = t)) dt``, one adaptive integral per record and draw
    (:func:`~pymc_edp.base.quadrature.log_integrals`, relative error under
    :data:`QUADRATURE_RTOL`). Records of one value only.

Otherwise (discrete values, records of several values that are not Gaussian) the route is
``refit``: every neighbour is refitted with its record unobserved.

References
----------
.. [1] Bürkner, P.-C., Gabry, J. and Vehtari, A. "Efficient leave-one-out cross-validation
   for Bayesian non-factorized normal and Student-t models." Computational Statistics 36,
   2021.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

import numpy as np
import xarray as xr

from pymc_edp.base.quadrature import log_integrals
from pymc_edp.core.loglik import NonFactorisedError
from pymc_edp.model.cache import share_data
from pymc_edp.model.compat import without_initial_values
from pymc_edp.model.conditional import (
    block_log_conditionals,
    conditional_logp,
    gaussian_derivatives_of,
    is_student_t,
    student_t_conditional,
)
from pymc_edp.model.structure import (
    Structure,
    likelihood_terms,
    observed_node,
    quadratic_in_values,
    values_as_input,
)

__all__ = [
    "CHECK_DRAWS",
    "QUADRATIC_ATOL",
    "QUADRATURE_RTOL",
    "ROUTES",
    "Conditionals",
    "CoupledLikelihood",
    "record_logp",
]

ROUTES = ("student_t", "gaussian", "gaussian (checked)", "quadrature", "refit")
#: Nats by which ``f`` may depart from its quadratic expansion (rounding of a sum of terms).
QUADRATIC_ATOL = 1e-6
#: Draws (spread over the chains) at which the quadratic expansion is checked, besides
#: those where a parameter is smallest or largest.
CHECK_DRAWS = 16
#: Offsets (conditional standard deviations) checked at those draws.
_OFFSETS = (-6.0, -3.0, -1.5, -0.5, 0.5, 1.5, 3.0, 6.0)
#: Relative error of every quadrature integral.
QUADRATURE_RTOL = 1e-9
#: Values (batch x record values) one compiled call evaluates at most.
_BATCH_VALUES = 2**22


@dataclass(frozen=True)
class Conditionals:
    """``(S, n_records)`` conditional log-densities at the data (and at replacements)."""

    at_data: np.ndarray
    at: tuple  # one (S, n_records) array per replacement
    route: str
    note: str  # what was done, for the audit's messages


class CoupledLikelihood:
    """Each record's ``log p(y_r | y_-r, theta)`` for a coupled observed variable.

    Parameters
    ----------
    model : pymc.Model
    name : str
        The observed variable.
    structure : Structure
        Its records (:func:`~pymc_edp.model.structure.read_structure`).
    keep_transforms : bool, default False
        Graphs in the model's own (unconstrained) value space, as moment matching needs;
        by default in the constrained space of posterior draws.

    Examples
    --------
    An AR(1) series: the proven Gaussian route.

    >>> from pymc_edp.model.coupled import CoupledLikelihood
    >>> from pymc_edp.model.structure import read_structure
    >>> y = np.array([0.0, 0.5, 0.2, -0.4, 0.1])
    >>> with pm.Model() as m:
    ...     rho = pm.Normal("rho", 0.0, 0.5)
    ...     _ = pm.AR("y", rho=[rho], sigma=1.0, init_dist=pm.Normal.dist(), observed=y)
    >>> lik = CoupledLikelihood(m, "y", read_structure(m, m["y"]))
    >>> lik.route
    'gaussian'
    """

    def __init__(self, model, name: str, structure: Structure, keep_transforms: bool = False):
        import pytensor.tensor as pt
        from pymc.model.transform.conditioning import remove_value_transforms
        from pymc.pytensorf import compile as pm_compile

        structure.check_changeable()
        umodel = without_initial_values(model)
        if not keep_transforms:  # a clone, reading the model's pm.Data at every call
            umodel = share_data(model, remove_value_transforms(umodel))
        rv = umodel[name]
        self.name, self.structure = name, structure
        value, data = observed_node(umodel, rv)
        if data is None:
            raise NonFactorisedError(
                f"the observed values of {name!r} are not data: its records' conditionals "
                "cannot be computed",
                name=name,
            )
        terms = likelihood_terms(umodel, rv)
        self.terms = tuple(terms)
        total = pt.add(*[t.sum() for t in terms.values()])
        y, (total_y,) = values_as_input([total], value, data, name)
        self.free = [v.name for v in umodel.free_RVs]
        values = [umodel.rvs_to_values[v] for v in umodel.free_RVs]
        self.dtypes = [v.dtype for v in values]
        self._values, self._y, self._total = values, y, total_y
        self._rv, self._model = rv, umodel
        self._compile = pm_compile
        self._batch = None
        self._symbolic = None
        self._blocks_fn = None
        self._data = self.data
        self.discrete = value.dtype.startswith(("int", "uint", "bool"))
        self.route = self._structural_route()

    @property
    def data(self) -> np.ndarray:
        """The observed values now (``pm.set_data`` included)."""
        return np.asarray(observed_node(self._model, self._rv)[1])

    # ------------------------------------------------------------------ routes
    def _structural_route(self) -> str:
        """The route the graph decides: closed forms, a proven Gaussian, or to be checked."""
        if self.discrete:
            return "refit"
        if is_student_t(self._rv) and len(self.terms) == 1 and self.structure.record_size == 1:
            return "student_t"
        if quadratic_in_values(self._total, self._y):
            return "gaussian"
        return "gaussian (checked)"  # until the draws say otherwise

    @property
    def symbolic(self) -> bool:
        """Whether the conditionals are a graph of the parameters (moment matching needs it)."""
        return self.route in ("student_t", "gaussian")

    def record_graph(self, at=None):
        """``(n_elements,)`` graph of ``log p(at_e | y_-e, theta)``, for a symbolic route."""
        import pytensor.tensor as pt
        from pytensor.graph.replace import clone_replace

        if not self.symbolic:
            raise NonFactorisedError(
                f"the conditionals of {self.name!r} are computed numerically (checked "
                "Gaussian or quadrature), not a graph",
                name=self.name,
            )
        y = self._y
        at = y if at is None else pt.specify_shape(at, y.type.shape)
        if self.route == "student_t":
            nu, mu, scale = self._model.replace_rvs_by_values(list(self._rv.owner.inputs[-3:]))
            out = student_t_conditional(nu, mu, scale, y, at)
        else:
            out = conditional_logp(self._total, y, at)
        value = self._model.rvs_to_values[self._rv]
        return clone_replace([out], replace={y: value})[0]

    # ------------------------------------------------------------------ evaluation
    def __call__(self, posterior: xr.Dataset, at: np.ndarray | None = None) -> np.ndarray:
        """``(S, n_records)`` conditionals at the data, or at ``at`` (one array of values)."""
        ats = () if at is None else (at,)
        out = self.conditionals(posterior, ats)
        return out.at_data if at is None else out.at[0]

    def conditionals(self, posterior: xr.Dataset, ats=()) -> Conditionals:
        """Conditionals at the data and at each array of replacement values in ``ats``."""
        from pymc_edp.model.stream import _posterior_draws

        if self.route == "refit":
            raise NonFactorisedError(
                f"the likelihood of {self.name!r} couples its records and its values are "
                "discrete: each neighbour is refitted with its record unobserved",
                name=self.name,
            )
        self._data = self.data  # read once per call: pm.set_data may have changed them
        start = time.perf_counter()
        size = self.structure.record_size
        if size > 1:  # records of several values: each row's block conditional
            if ats:
                raise NonFactorisedError(
                    f"a record of {self.name!r} holds {size} values that its likelihood "
                    "couples with other records: a replaced record is refitted",
                    name=self.name,
                )
            rows = np.arange(self._data.size).reshape(-1, size)
            at_data = self.blocks(posterior, list(rows))
            note = self._note(time.perf_counter() - start, at_data.shape[0])
            return Conditionals(at_data, (), self.route, note)
        draws = _posterior_draws(posterior, self.free, self.dtypes)
        ats = tuple(np.asarray(a, dtype=self._data.dtype).reshape(self._data.shape) for a in ats)
        if self.symbolic:
            at_data, at = self._symbolic_conditionals(draws, ats)
        else:
            fd = self._differences(draws)
            if self._quadratic(draws, fd):
                route = "gaussian (checked)"
                at_data, at = self._checked_conditionals(fd, ats)
            else:
                route = "quadrature"
                at_data, at = self._quadrature(draws, fd, ats)
            self.route = route
        note = self._note(time.perf_counter() - start, _n_samples(draws))
        return Conditionals(at_data, at, self.route, note)

    def _note(self, seconds: float, n_samples: int) -> str:
        how = {
            "student_t": "the Student-t closed form",
            "gaussian": "the Gaussian closed form (a quadratic form in its values, proven from "
            "the graph)",
            "gaussian (checked)": "the Gaussian closed form (exactly quadratic in each "
            "record's direction at every posterior draw, checked)",
            "quadrature": f"adaptive quadrature (relative error under {QUADRATURE_RTOL:g})",
        }[self.route]
        return (
            f"{self.structure.describe()}; each record reweighted by p(y_i | y_-i, theta), "
            f"by {how} ({self.structure.n_records} records x {n_samples} draws in "
            f"{seconds:.1f} s); refits leave the record unobserved"
        )

    # ------------------------------------------------------------------ symbolic
    def _symbolic_conditionals(self, draws, ats):
        import pytensor.tensor as pt
        from pytensor.graph.replace import clone_replace

        if self._symbolic is None:
            at = pt.tensor(name=f"{self.name}_at", dtype=self._y.dtype, shape=self._y.type.shape)
            value = self._model.rvs_to_values[self._rv]
            (graph,) = clone_replace([self.record_graph(at)], replace={value: self._y})
            self._symbolic = self._compile(
                [*self._values, self._y, at], graph, on_unused_input="ignore"
            )
        n_samples = _n_samples(draws)
        y = self._data
        outs = []
        for target in (y, *ats):
            out = np.empty((n_samples, y.size))
            for s in range(n_samples):
                out[s] = np.asarray(self._symbolic(*(d[s] for d in draws), y, target)).ravel()
            outs.append(out)
        return outs[0], tuple(outs[1:])

    # ------------------------------------------------------------------ numeric
    def _evaluate(self, draws, index: np.ndarray, Y: np.ndarray) -> np.ndarray:
        """``f`` at draws ``index`` (B,) and values ``Y`` (B, *shape), in chunks."""
        import pytensor.tensor as pt
        from pytensor.graph.replace import vectorize_graph

        if self._batch is None:
            batched = [
                pt.tensor(name=f"{v.name}_b", dtype=v.dtype, shape=(None, *v.type.shape))
                for v in self._values
            ]
            Yb = pt.tensor(
                name=f"{self.name}_b", dtype=self._y.dtype, shape=(None, *self._y.type.shape)
            )
            replace = dict(zip(self._values, batched, strict=True))
            replace[self._y] = Yb
            try:
                out = vectorize_graph(self._total, replace)
                self._batch = (True, self._compile([*batched, Yb], out, on_unused_input="ignore"))
            except Exception:  # pragma: no cover - an op that does not vectorise: one at a time
                fn = self._compile([*self._values, self._y], self._total, on_unused_input="ignore")
                self._batch = (False, fn)
        vectorised, fn = self._batch
        out = np.empty(index.size)
        step = max(1, _BATCH_VALUES // max(1, self._data.size))
        for lo in range(0, index.size, step):
            sl = slice(lo, lo + step)
            idx = index[sl]
            if vectorised:
                out[sl] = np.asarray(fn(*(d[idx] for d in draws), Y[sl])).ravel()
            else:
                out[sl] = [
                    float(fn(*(d[i] for d in draws), yy)) for i, yy in zip(idx, Y[sl], strict=True)
                ]
        return np.where(np.isnan(out), -np.inf, out)

    def _shifted(self, draws, s_index, elements, offsets, placed=False) -> np.ndarray:
        """``f`` at draws ``s_index`` with flat ``elements`` moved by (or set to) ``offsets``."""
        y = self._data.ravel()
        Y = np.broadcast_to(y, (s_index.size, y.size)).copy()
        if placed:
            Y[np.arange(s_index.size), elements] = offsets
        else:
            Y[np.arange(s_index.size), elements] += offsets
        return self._evaluate(draws, s_index, Y.reshape(-1, *self._data.shape))

    def _plus_minus(self, draws, n_samples: int, h: float):
        """``f`` with each element moved by ``+h`` and by ``-h``: two ``(S, n)`` arrays."""
        n = self._data.size
        ss, ee = _grid(np.arange(n_samples), np.arange(n))
        return [
            self._shifted(draws, ss, ee, np.full(ss.size, step)).reshape(n_samples, n)
            for step in (h, -h)
        ]

    def _differences(self, draws) -> dict:
        """``f`` at the data, and central differences of step ``h`` along every element."""
        n_samples = _n_samples(draws)
        h = _step(self._data)
        s = np.arange(n_samples)
        f0 = self._evaluate(draws, s, np.broadcast_to(self._data, (n_samples, *self._data.shape)))
        plus, minus = self._plus_minus(draws, n_samples, h)
        g = (plus - minus) / (2 * h)
        q = -(plus - 2 * f0[:, None] + minus) / h**2
        return {"f0": f0, "g": g, "q": q, "h": h}

    def _quadratic(self, draws, fd) -> bool:
        """Whether ``f`` is exactly quadratic along every element (see the module docstring)."""
        q, g, f0 = fd["q"], fd["g"], fd["f0"]
        if not (np.all(np.isfinite(q)) and np.all(q > 0) and np.all(np.isfinite(f0))):
            return False
        n_samples, n = q.shape
        h = fd["h"] / 2
        plus, minus = self._plus_minus(draws, n_samples, h)
        q_half = -(plus - 2 * f0[:, None] + minus) / h**2
        tol = QUADRATIC_ATOL + 1e-12 * np.abs(f0[:, None])
        if not np.all(np.abs(q_half - q) * h**2 <= 4 * tol):
            return False
        rows = _check_draws(draws, n_samples)
        sd = 1.0 / np.sqrt(q[rows])
        ss, ee = _grid(rows, np.arange(n))
        for c in _OFFSETS:
            t = c * sd
            got = self._shifted(draws, ss, ee, t.ravel()).reshape(rows.size, n)
            want = f0[rows, None] + g[rows] * t - 0.5 * q[rows] * t**2
            if not np.all(np.abs(got - want) <= tol[rows]):
                return False
        return True

    def _checked_conditionals(self, fd, ats):
        """Gaussian conditionals from exact central differences (``f`` checked quadratic)."""
        q, g = fd["q"], fd["g"]
        y = self._data.ravel()
        mean = y[None, :] + g / q
        outs = []
        for target in (self._data, *ats):
            t = np.asarray(target, dtype=float).ravel()
            outs.append(0.5 * np.log(q / (2 * np.pi)) - 0.5 * q * (t[None, :] - mean) ** 2)
        return outs[0], tuple(outs[1:])

    def _quadrature(self, draws, fd, ats):
        """``f(y with y_e = at_e) - log integral of exp(f(y with y_e = t)) dt`` per element."""
        q, h = fd["q"], fd["h"]
        n_samples, n = q.shape
        y = self._data.ravel()
        # searched from each record's own value (in the support, near the mass), in steps of
        # its conditional scale where the curvature gives one (within 100 times the step)
        good = np.isfinite(q) & (q > 0)
        scale = np.where(good, 1.0 / np.sqrt(np.where(good, q, 1.0)), h)
        scale = np.clip(scale, h / 100, 100 * h)
        centre = np.broadcast_to(y, scale.shape)
        s_of, e_of = _grid(np.arange(n_samples), np.arange(n))

        def logf(ids, t):
            return self._shifted(draws, s_of[ids], e_of[ids], t, placed=True)

        res = log_integrals(logf, centre.ravel(), scale.ravel(), rtol=QUADRATURE_RTOL)
        log_z = res.log_z.reshape(n_samples, n)
        if not res.converged.all() or not np.all(np.isfinite(log_z)):
            bad = int((~res.converged).sum() + (~np.isfinite(res.log_z)).sum())
            raise NonFactorisedError(
                f"the quadrature of {bad} conditional(s) of {self.name!r} did not converge "
                "(a density without a finite integral in one record, or too heavy tails): "
                "each neighbour is refitted with its record unobserved",
                name=self.name,
            )
        outs = [fd["f0"][:, None] - log_z]
        for target in ats:
            t = np.broadcast_to(np.asarray(target, dtype=float).ravel(), (n_samples, n)).ravel()
            placed = self._shifted(draws, s_of, e_of, t, placed=True)
            outs.append(placed.reshape(n_samples, n) - log_z)
        return outs[0], tuple(outs[1:])

    # ------------------------------------------------------------------ blocks
    def blocks(self, posterior: xr.Dataset, blocks) -> np.ndarray:
        """``(S, len(blocks))`` ``log p(y_b | y_-b, theta)`` of blocks of flat elements.

        For a Gaussian likelihood, proven (its Hessian) or checked (exact differences, and
        the expansion checked along each element and one direction inside each block).
        Raises :class:`NonFactorisedError` otherwise.
        """
        from pymc_edp.model.stream import _posterior_draws

        blocks = [np.asarray(b, dtype=np.int64) for b in blocks]
        self._data = self.data
        draws = _posterior_draws(posterior, self.free, self.dtypes)
        n_samples = _n_samples(draws)
        if self.route == "gaussian":
            if self._blocks_fn is None:
                graphs = gaussian_derivatives_of(self._total, self._y)
                self._blocks_fn = self._compile(
                    [*self._values, self._y], graphs, on_unused_input="ignore"
                )
            out = np.empty((n_samples, len(blocks)))
            for s in range(n_samples):
                g, h = self._blocks_fn(*(d[s] for d in draws), self._data)
                out[s] = block_log_conditionals(np.asarray(g), np.asarray(h), blocks)
            return out
        if self.route == "gaussian (checked)":
            fd = self._differences(draws)
            if self._quadratic(draws, fd) and self._block_quadratic(draws, fd, blocks):
                return self._block_conditionals(draws, fd, blocks)
        raise NonFactorisedError(
            f"the likelihood of {self.name!r} is not Gaussian: the conditional of a block of "
            "its records is not reweighted; each neighbour is refitted with its records "
            "unobserved",
            name=self.name,
        )

    def _pairs(self, draws, blocks, h):
        """``f`` at ``y + h e_i + h e_j`` for every pair ``i <= j`` of every block."""
        n_samples = _n_samples(draws)
        pairs = [(i, j) for b in blocks for k, i in enumerate(b) for j in b[k:]]
        pi = np.array([p[0] for p in pairs], dtype=np.int64)
        pj = np.array([p[1] for p in pairs], dtype=np.int64)
        ss = np.repeat(np.arange(n_samples), pi.size)
        y = self._data.ravel()
        Y = np.broadcast_to(y, (ss.size, y.size)).copy()
        rows = np.arange(ss.size)
        Y[rows, np.tile(pi, n_samples)] += h
        Y[rows, np.tile(pj, n_samples)] += h
        values = self._evaluate(draws, ss, Y.reshape(-1, *self._data.shape))
        return dict(zip(pairs, values.reshape(n_samples, pi.size).T, strict=True))

    def _block_precision(self, draws, fd, blocks):
        """Per block, ``(S, k, k)`` precision from second differences (exact: quadratic)."""
        h, f0 = fd["h"], fd["f0"]
        n_samples = f0.size
        idx = np.array(sorted({int(i) for b in blocks for i in b}), dtype=np.int64)
        ss, ee = _grid(np.arange(n_samples), idx)
        plus = self._shifted(draws, ss, ee, np.full(ss.size, h))
        plus = dict(zip(idx.tolist(), plus.reshape(n_samples, idx.size).T, strict=True))
        both = self._pairs(draws, blocks, h)
        out = []
        for b in blocks:
            k = b.size
            q = np.empty((n_samples, k, k))
            for a in range(k):
                for c in range(a, k):
                    i, j = int(b[a]), int(b[c])
                    if i == j:
                        val = -(both[(i, j)] - 2 * plus[i] + f0) / h**2
                    else:
                        val = -(both[(i, j)] - plus[i] - plus[j] + f0) / h**2
                    q[:, a, c] = q[:, c, a] = val
            out.append(q)
        return out

    def _block_quadratic(self, draws, fd, blocks) -> bool:
        """The expansion is exact along one mixed direction inside every block."""
        f0, g = fd["f0"], fd["g"]
        n_samples = f0.size
        precisions = self._block_precision(draws, fd, blocks)
        rng = np.random.default_rng(0)
        few = _check_draws(draws, n_samples)
        y = self._data.ravel()
        for b, q in zip(blocks, precisions, strict=True):
            if b.size < 2:
                continue
            d = rng.normal(size=b.size)
            d /= np.linalg.norm(d)
            for s in few:
                curv = float(d @ q[s] @ d)
                if not curv > 0:
                    return False
                for c in (-3.0, 3.0):
                    t = c / np.sqrt(curv)
                    Y = y.copy()
                    Y[b] += t * d
                    got = self._evaluate(draws, np.array([s]), Y.reshape(1, *self._data.shape))[0]
                    want = f0[s] + t * float(g[s, b] @ d) - 0.5 * t**2 * curv
                    if not abs(got - want) <= QUADRATIC_ATOL + 1e-12 * abs(f0[s]):
                        return False
        return True

    def _block_conditionals(self, draws, fd, blocks) -> np.ndarray:
        """``log p(y_b | y_-b)`` from the blocks' precisions and the gradient at the data."""
        g = fd["g"]
        precisions = self._block_precision(draws, fd, blocks)
        n_samples = g.shape[0]
        out = np.empty((n_samples, len(blocks)))
        for j, (b, q) in enumerate(zip(blocks, precisions, strict=True)):
            for s in range(n_samples):
                gb = g[s, b]
                chol = np.linalg.cholesky(q[s])
                z = np.linalg.solve(chol, gb)
                out[s, j] = (
                    -0.5 * b.size * np.log(2 * np.pi) + np.log(np.diag(chol)).sum() - 0.5 * z @ z
                )
        return out


def record_logp(model, rv, at=None, records: str = "auto"):
    """Each record's log-likelihood term at ``at`` (default the data), or its conditional.

    In ``model``'s value space. Factorised: PyMC's elementwise terms. Coupled: the graph of
    ``log p(at_i | y_-i)`` of a closed-form route (:meth:`CoupledLikelihood.record_graph`);
    :class:`NonFactorisedError` for a numeric one.

    Examples
    --------
    >>> from pymc_edp.model.coupled import record_logp
    >>> with pm.Model() as m:
    ...     mu = pm.Normal("mu")
    ...     y = pm.Normal("y", mu, 2.0, observed=[0.5, -1.2])
    >>> record_logp(m, y).eval({m.rvs_to_values[mu]: 0.0}).round(3)
    array([-1.643, -1.792])
    """
    from pytensor.graph.replace import clone_replace

    from pymc_edp.model.structure import read_structure

    structure = read_structure(model, rv, records)
    if structure.coupled:
        lik = CoupledLikelihood(model, rv.name, structure, keep_transforms=True)
        if lik.structure.record_size > 1:
            raise NonFactorisedError(
                f"records of {rv.name!r} hold several coupled values: no per-record graph",
                name=rv.name,
            )
        return lik.record_graph(at)
    (logp,) = model.logp(vars=[rv], sum=False)
    if at is None:
        return logp
    return clone_replace([logp], replace={model.rvs_to_values[rv]: at})[0]


def _n_samples(draws) -> int:
    return draws[0].shape[0] if draws else 1


def _grid(rows: np.ndarray, elements: np.ndarray):
    """Every ``(draw, element)`` pair of ``rows`` and ``elements``, flat: two arrays."""
    return np.repeat(rows, elements.size), np.tile(elements, rows.size)


def _check_draws(draws, n_samples: int) -> np.ndarray:
    """Draws spread over the chains, and where each parameter is smallest and largest."""
    rows = [np.linspace(0, n_samples - 1, min(CHECK_DRAWS, n_samples)).astype(int)]
    for d in draws:
        flat = np.asarray(d, dtype=float).reshape(n_samples, -1)
        rows += [flat.argmin(axis=0), flat.argmax(axis=0)]
    return np.unique(np.concatenate(rows))


def _step(data: np.ndarray) -> float:
    """A step for central differences: half the spread of successive values, or of the values."""
    flat = np.asarray(data, dtype=float).ravel()
    flat = flat[np.isfinite(flat)]
    spread = np.std(np.diff(flat)) / 2 if flat.size > 2 else 0.0
    if not spread > 0:
        spread = np.std(flat) if flat.size > 1 else 0.0
    if not spread > 0:
        spread = 1.0
    return float(spread)
