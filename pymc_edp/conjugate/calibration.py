"""Priors and noise scales calibrated to an exact differential-privacy epsilon.

Each mechanism knows its exact DP epsilon (``.epsilon``), tabulates its transition matrix
(checked numerically with :func:`pymc_edp.risk.dp_epsilon`) and builds the PyMC model that
runs it.

=====================================  ===========================================
Mechanism                              Prior / scale for a target epsilon
=====================================  ===========================================
Beta-Binomial synthesizer              ``Beta(a, a)``, ``a = n_s / (e^eps - 1)``
Beta-Bernoulli synthesizer (M & R)     ``Beta(a, a)``, ``a = 1 / (e^(eps / n_s) - 1)``
Dirichlet-Multinomial synthesizer      ``Dirichlet(a, ..., a)``, ``a = n_s / (e^eps - 1)``
Laplace mechanism                      scale ``b = Delta f / eps``
=====================================  ===========================================

Neighbouring datasets differ in one record's value (bounded DP); the synthesizers' epsilon
does not depend on the number of confidential records n. Each object cites its paper.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd
import xarray as xr
from scipy import special

from pymc_edp.base.validate import check_int, check_real
from pymc_edp.conjugate.posteriors import (
    _transition,
    beta_binomial_synthesizer_matrix,
    dirichlet_multinomial_log_pmf,
)

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "BernoulliSynthesizer",
    "BetaBinomialSynthesizer",
    "DirichletMultinomialSynthesizer",
    "LaplaceMechanism",
    "bernoulli_synthesizer_prior",
    "beta_binomial_synthesizer_prior",
    "dirichlet_multinomial_synthesizer_prior",
    "laplace_mechanism",
]


def _split_by_mean(a_min: float, prior_mean: float) -> tuple[float, float]:
    """``(alpha, beta)`` with ``min(alpha, beta) = a_min`` and ``alpha/(alpha+beta) = m``."""
    m = float(prior_mean)
    if not 0 < m < 1:
        raise ValueError(f"`prior_mean` must lie in (0, 1), got {prior_mean!r}.")
    a_min = float(a_min)
    if m <= 0.5:
        return a_min, a_min * (1 - m) / m
    return a_min * m / (1 - m), a_min


# Smallest positive normal double: a calibrated prior parameter below it has lost precision.
_TINY = float(np.finfo(float).tiny)


def _calibrated_parameter(
    numerator: float, exponent: float, epsilon: float, n_s: int, formula: str
) -> float:
    """``numerator / (e^exponent - 1)``, also where ``e^exponent`` overflows.

    A :class:`ValueError` when the result underflows double precision (an epsilon too large
    to calibrate), rather than 0 or a denormal number the mechanism cannot use.
    """
    if exponent < 700.0:
        a = numerator / math.expm1(exponent)
    else:  # e^x - 1 == e^x in double precision here; math.exp underflows to 0 quietly
        a = math.exp(math.log(numerator) - exponent)
    if a < _TINY:
        limit = (math.log(numerator) - math.log(_TINY)) * (epsilon / exponent)
        raise ValueError(
            f"epsilon={epsilon!r} is too large to calibrate: the prior parameter {formula} = "
            f"e^{math.log(numerator) - exponent - math.log(-math.expm1(-exponent)):.1f} "
            f"underflows double precision (the largest usable epsilon with n_synthetic={n_s} "
            f"is about {limit:.1f}); an epsilon this large gives no meaningful privacy -- "
            "use a smaller epsilon"
        )
    return a


def _log1p_ratio(numerator: float, denominator: float) -> float:
    """``log(1 + numerator / denominator)`` for positive values, without overflow."""
    ratio = float(numerator) / float(denominator)
    if math.isfinite(ratio):
        return math.log1p(ratio)
    return math.log(numerator) - math.log(denominator) + math.log1p(denominator / numerator)


def _check_counts(x, n) -> tuple[int, int]:
    n = check_int(n, "n", 0)
    x = check_int(x, "x", 0)
    if x > n:
        raise ValueError(f"Need 0 <= x <= n, got x={x}, n={n}.")
    return x, n


@dataclass(frozen=True)
class _BetaPriorSynthesizer:
    """Prior ``Beta(alpha, beta)`` and ``n_synthetic`` records, checked."""

    alpha: float
    beta: float
    n_synthetic: int

    def __post_init__(self):
        object.__setattr__(self, "alpha", check_real(self.alpha, "alpha", positive=True))
        object.__setattr__(self, "beta", check_real(self.beta, "beta", positive=True))
        object.__setattr__(self, "n_synthetic", check_int(self.n_synthetic, "n_synthetic", 1))


@dataclass(frozen=True)
class BetaBinomialSynthesizer(_BetaPriorSynthesizer):
    """The Beta-Binomial synthesizer of Abowd & Vilhuber (2008).

    Given ``x`` successes among ``n`` confidential binary records and the prior
    ``Beta(alpha, beta)`` it draws ``p ~ Beta(alpha + x, beta + n - x)`` and releases
    ``x_synthetic ~ Binomial(n_synthetic, p)``.

    Notes
    -----
    Its DP epsilon is exactly ``log(1 + n_s / min(alpha, beta))``, attained at
    ``x_synthetic = n_s`` between ``x = 0`` and ``x = 1`` (or at ``x_synthetic = 0`` between
    ``x = n - 1`` and ``x = n``), because ``P(k | x + 1) / P(k | x) = (alpha + x + k)(beta +
    n - x - 1) / ((alpha + x)(beta + n - x - 1 + n_s - k))``. Charest & Han (2017, Sec. 3.1)
    print the calibration as ``alpha = (e^eps - 1) / n``, the reciprocal of the correct
    value; their Table 1 (``n_s = 5``, ``alpha = beta = 0.5``, eps = log 11) follows the
    formula here.

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). "On the Meaning and Limits of Empirical
       Differential Privacy." *Journal of Privacy and Confidentiality* 7(3), Table 1.
    .. [2] Abowd, J. M. and Vilhuber, L. (2008). "How protective are synthetic data?"
       *Privacy in Statistical Databases*, 239-246.

    Examples
    --------
    >>> syn = BetaBinomialSynthesizer(alpha=0.5, beta=0.5, n_synthetic=5)
    >>> round(syn.epsilon, 4)  # log 11, Charest & Han's Table 1
    2.3979
    >>> syn.transition_matrix(5).shape
    (6, 6)
    """

    @property
    def epsilon(self) -> float:
        """Exact DP epsilon, ``log(1 + n_s / min(alpha, beta))``."""
        return _log1p_ratio(self.n_synthetic, min(self.alpha, self.beta))

    def transition_matrix(self, n: int, *, log: bool = False) -> xr.DataArray:
        """``P(x_synthetic | x)``, ``x = 0..n``: :func:`.beta_binomial_synthesizer_matrix`."""
        return beta_binomial_synthesizer_matrix(
            n, self.alpha, self.beta, n_synthetic=self.n_synthetic, log=log
        )

    def build_model(self, x: int, n: int) -> pm.Model:
        """PyMC model of the synthesizer on ``x`` successes out of ``n`` records.

        Forward sampling runs the mechanism (``p`` is the posterior, by conjugacy).
        """
        import pymc as pm

        x, n = _check_counts(x, n)
        with pm.Model() as model:
            p = pm.Beta("p", alpha=self.alpha + x, beta=self.beta + n - x)
            pm.Binomial("x_synthetic", n=self.n_synthetic, p=p)
        return model


def beta_binomial_synthesizer_prior(
    epsilon: float,
    n_synthetic: int,
    *,
    prior_mean: float = 0.5,
) -> BetaBinomialSynthesizer:
    """Beta prior that makes the Beta-Binomial synthesizer exactly epsilon-DP.

    Parameters
    ----------
    epsilon : float
        Target DP epsilon (> 0).
    n_synthetic : int
        Number of synthetic records ``n_s``.
    prior_mean : float, default 0.5
        Mean of the Beta prior: 0.5 gives ``Beta(a, a)`` with ``a = n_s / (e^eps - 1)``;
        otherwise the smaller parameter is ``a`` (epsilon depends on it only).

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. (2017). *J. Privacy and Confidentiality* 7(3), Sec. 3.1.

    Examples
    --------
    >>> syn = beta_binomial_synthesizer_prior(np.log(11), n_synthetic=5)
    >>> round(syn.alpha, 4), round(syn.beta, 4), round(syn.epsilon, 4)
    (0.5, 0.5, 2.3979)
    >>> syn = beta_binomial_synthesizer_prior(1.0, 5, prior_mean=0.25)
    >>> round(syn.alpha, 4), round(syn.beta, 4), round(syn.epsilon, 4)
    (2.9099, 8.7297, 1.0)
    """
    return _calibrated_beta(BetaBinomialSynthesizer, epsilon, n_synthetic, prior_mean)


def _smallest_parameter(epsilon, n_synthetic, *, per_record=False) -> tuple[float, int]:
    """``(a, n_s)``: the smallest prior parameter making the synthesizer exactly epsilon-DP."""
    eps = check_real(epsilon, "epsilon", positive=True)
    n_s = check_int(n_synthetic, "n_synthetic", 1)
    if per_record:  # Bernoulli: epsilon = n_s log(1 + 1 / a)
        return _calibrated_parameter(1.0, eps / n_s, eps, n_s, "1 / (e^(eps / n_s) - 1)"), n_s
    return _calibrated_parameter(n_s, eps, eps, n_s, "n_s / (e^eps - 1)"), n_s


def _calibrated_beta(cls, epsilon, n_synthetic, prior_mean, *, per_record=False):
    """``cls`` with the Beta prior making it exactly epsilon-DP."""
    a_min, n_s = _smallest_parameter(epsilon, n_synthetic, per_record=per_record)
    alpha, beta = _split_by_mean(a_min, prior_mean)
    return cls(alpha=alpha, beta=beta, n_synthetic=n_s)


@dataclass(frozen=True)
class BernoulliSynthesizer(_BetaPriorSynthesizer):
    """McClure & Reiter's Beta-Bernoulli (posterior-predictive) synthesizer.

    With ``x`` ones among ``n`` confidential records it releases ``n_synthetic`` records
    ``y*_i ~ Bernoulli((x + alpha) / (n + alpha + beta))`` (their eq. 3: the posterior mean
    plugged in), so ``x_synthetic ~ Binomial(n_s, (x + alpha) / (n + alpha + beta))``.

    Notes
    -----
    Exact DP epsilon (McClure & Reiter, Appendix A, eq. 9):
    ``eps = n_s * log((1 + min(alpha, beta)) / min(alpha, beta))``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). "Differential Privacy and Statistical
       Disclosure Risk Measures: An Investigation with Binary Synthetic Data."
       *Transactions on Data Privacy* 5, eq. (3) and Appendix A.

    Examples
    --------
    >>> syn = BernoulliSynthesizer(alpha=1.0, beta=1.0, n_synthetic=10)
    >>> round(syn.epsilon, 4)  # 10 log 2
    6.9315
    >>> syn.success_probability([0, 5, 10], n=10).round(4).tolist()
    [0.0833, 0.5, 0.9167]
    """

    @property
    def epsilon(self) -> float:
        """Exact DP epsilon, ``n_s log(1 + 1 / min(alpha, beta))``."""
        return self.n_synthetic * _log1p_ratio(1.0, min(self.alpha, self.beta))

    def success_probability(self, x, n: int) -> np.ndarray:
        """Synthesis probability ``(x + alpha) / (n + alpha + beta)`` (vectorised in x)."""
        return (np.asarray(x, dtype=float) + self.alpha) / (n + self.alpha + self.beta)

    def transition_matrix(self, n: int, *, log: bool = False) -> xr.DataArray:
        """``P(x_synthetic | x)`` for ``x = 0..n``: Binomial(n_s, (x + a) / (n + a + b)) rows."""
        n = check_int(n, "n", 0)
        n_s = self.n_synthetic
        x = np.arange(n + 1, dtype=float)[:, None]
        k = np.arange(n_s + 1)[None, :]
        # log p and log(1 - p) as logs of ratios: 1 - p is not rounded away when p ~ 1
        # (tiny beta, large epsilon), and huge alpha, beta (tiny epsilon) keep their digits.
        total = n + self.alpha + self.beta
        log_p = np.log((x + self.alpha) / total)
        log_q = np.log((n - x + self.beta) / total)
        log_pmf = (
            special.gammaln(n_s + 1)
            - special.gammaln(k + 1)
            - special.gammaln(n_s - k + 1)
            + k * log_p
            + (n_s - k) * log_q
        )
        coords = {"x": np.arange(n + 1), "x_synthetic": np.arange(n_s + 1)}
        attrs = {"alpha": self.alpha, "beta": self.beta, "n": n, "n_synthetic": n_s}
        return _transition(log_pmf, log, coords, attrs)

    def build_model(self, x: int, n: int) -> pm.Model:
        """PyMC model of the synthesizer on ``x`` ones out of ``n`` records.

        Forward sampling runs the mechanism: ``p``, ``y_synthetic`` and their sum ``x_synthetic``.
        """
        import pymc as pm

        x, n = _check_counts(x, n)
        with pm.Model() as model:
            p = pm.Deterministic("p", pm.math.constant(float(self.success_probability(x, n))))
            y = pm.Bernoulli("y_synthetic", p=p, shape=(self.n_synthetic,))
            pm.Deterministic("x_synthetic", y.sum())
        return model


def bernoulli_synthesizer_prior(
    epsilon: float,
    n_synthetic: int,
    *,
    prior_mean: float = 0.5,
) -> BernoulliSynthesizer:
    """Beta prior that makes McClure & Reiter's Bernoulli synthesizer exactly epsilon-DP.

    As :func:`beta_binomial_synthesizer_prior`, with ``a = 1 / (e^(eps / n_s) - 1)``.

    References
    ----------
    .. [1] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, Sec. 3.1
       and Appendix A.

    Examples
    --------
    >>> syn = bernoulli_synthesizer_prior(1.0, n_synthetic=1000)  # McClure & Reiter's n_s
    >>> round(syn.alpha, 2), round(syn.beta, 2), round(syn.epsilon, 4)
    (999.5, 999.5, 1.0)
    """
    return _calibrated_beta(
        BernoulliSynthesizer, epsilon, n_synthetic, prior_mean, per_record=True
    )


def _compositions(total: int, parts: int) -> np.ndarray:
    """All vectors of ``parts`` non-negative integers summing to ``total`` (lexicographic)."""
    rows = []
    for bars in itertools.combinations(range(total + parts - 1), parts - 1):
        edges = (-1, *bars, total + parts - 1)
        rows.append([edges[i + 1] - edges[i] - 1 for i in range(parts)])
    return np.array(rows, dtype=np.int64).reshape(-1, parts)


@dataclass(frozen=True)
class DirichletMultinomialSynthesizer:
    """Dirichlet-Multinomial synthesizer for a categorical variable with K categories.

    Given category counts ``x`` (summing to n) it draws ``p ~ Dirichlet(alpha + x)`` and
    releases ``x_synthetic ~ Multinomial(n_synthetic, p)``; ``alpha`` holds one prior
    parameter per category. K = 2 is the Beta-Binomial synthesizer.

    Notes
    -----
    Changing one record from category j to k multiplies ``P(x_synthetic | x)`` by
    ``(alpha_k + x_k + s_k) / (alpha_k + x_k) * (alpha_j + x_j - 1) / (alpha_j + x_j - 1 +
    s_j)``, maximal at ``s_k = n_s``, ``x_k = 0``; hence the exact DP epsilon
    ``log(1 + n_s / min_k alpha_k)``, as for two categories.

    References
    ----------
    .. [1] Machanavajjhala, A., Kifer, D., Abowd, J., Gehrke, J. and Vilhuber, L. (2008).
       "Privacy: Theory meets practice on the map." *ICDE 2008*, 277-286.
    .. [2] McClure, D. and Reiter, J. P. (2012). *Transactions on Data Privacy* 5, Sec. 5
       (the multinomial extension used by OnTheMap).

    Examples
    --------
    >>> from pymc_edp.risk import dp_epsilon
    >>> syn = DirichletMultinomialSynthesizer(alpha=(0.5, 1.0, 2.0), n_synthetic=5)
    >>> syn.n_categories, round(syn.epsilon, 4)
    (3, 2.3979)
    >>> t = syn.transition_matrix(2)  # 6 datasets of 2 records, 21 synthetic outcomes
    >>> t.shape
    (6, 21)
    >>> round(dp_epsilon(t, pairs=syn.neighbour_pairs(2)), 4)
    2.3979
    """

    alpha: tuple[float, ...]
    n_synthetic: int

    def __post_init__(self):
        a = tuple(float(v) for v in np.atleast_1d(self.alpha))
        if len(a) < 2:
            raise ValueError("`alpha` needs at least two categories.")
        for v in a:
            check_real(v, "alpha", positive=True)
        object.__setattr__(self, "alpha", a)
        object.__setattr__(self, "n_synthetic", check_int(self.n_synthetic, "n_synthetic", 1))

    @property
    def n_categories(self) -> int:
        """Number of categories K."""
        return len(self.alpha)

    @property
    def epsilon(self) -> float:
        """Exact DP epsilon, ``log(1 + n_s / min(alpha))``."""
        return _log1p_ratio(self.n_synthetic, min(self.alpha))

    def datasets(self, n: int) -> np.ndarray:
        """All count vectors of n records over the K categories, shape (m, K)."""
        return _compositions(check_int(n, "n", 0), self.n_categories)

    def neighbour_pairs(self, n: int) -> np.ndarray:
        """Row pairs of :meth:`transition_matrix` that differ by one record's category."""
        rows = self.datasets(n)
        index = {tuple(r): i for i, r in enumerate(rows)}
        pairs = []
        for i, r in enumerate(rows):
            for j, k in itertools.permutations(range(self.n_categories), 2):
                if r[j] > 0:
                    other = r.copy()
                    other[j] -= 1
                    other[k] += 1
                    if i < index[tuple(other)]:
                        pairs.append((i, index[tuple(other)]))
        return np.array(pairs, dtype=np.intp).reshape(-1, 2)

    def transition_matrix(self, n: int, *, log: bool = False) -> xr.DataArray:
        """``P(x_synthetic | x)`` over all count vectors (Dirichlet-Multinomial pmf).

        Rows and columns carry MultiIndexes with levels ``x_0..x_{K-1}`` and
        ``x_synthetic_0..``; pass :meth:`neighbour_pairs` to
        :func:`pymc_edp.risk.dp_epsilon` (``pairs=``).
        """
        rows = self.datasets(n)
        cols = _compositions(self.n_synthetic, self.n_categories)
        log_pmf = dirichlet_multinomial_log_pmf(np.asarray(self.alpha)[None, :] + rows, cols)

        def index(counts: np.ndarray, dim: str) -> xr.Coordinates:
            levels = [counts[:, i].astype(int) for i in range(self.n_categories)]
            names = [f"{dim}_{i}" for i in range(self.n_categories)]
            return xr.Coordinates.from_pandas_multiindex(
                pd.MultiIndex.from_arrays(levels, names=names), dim
            )

        coords = index(rows, "x").merge(index(cols, "x_synthetic")).coords
        return _transition(log_pmf, log, coords, {"n": int(n), "n_synthetic": self.n_synthetic})

    def build_model(self, counts: Sequence[int] | np.ndarray) -> pm.Model:
        """PyMC model of the synthesizer on the category ``counts`` (forward sampling runs it)."""
        import pymc as pm

        c = np.asarray(counts)
        if c.shape != (self.n_categories,) or np.any(c < 0) or np.any(c != np.round(c)):
            raise ValueError(
                f"`counts` must be {self.n_categories} non-negative integers, got {counts!r}."
            )
        with pm.Model() as model:
            p = pm.Dirichlet("p", a=np.asarray(self.alpha) + c)
            pm.Multinomial("x_synthetic", n=self.n_synthetic, p=p)
        return model


def dirichlet_multinomial_synthesizer_prior(
    epsilon: float,
    n_synthetic: int,
    n_categories: int | None = None,
    *,
    prior_mean: Sequence[float] | np.ndarray | None = None,
) -> DirichletMultinomialSynthesizer:
    """Dirichlet prior that makes the Dirichlet-Multinomial synthesizer exactly epsilon-DP.

    Parameters
    ----------
    epsilon, n_synthetic
        As in :func:`beta_binomial_synthesizer_prior`.
    n_categories : int, optional
        K, for the symmetric prior ``Dirichlet(a, ..., a)`` with ``a = n_s / (e^eps - 1)``.
    prior_mean : array_like, optional
        Prior mean vector (positive, summing to 1) instead of ``n_categories``; the
        smallest parameter is then ``a``.

    References
    ----------
    .. [1] Machanavajjhala, A. et al. (2008). *ICDE 2008*, 277-286.

    Examples
    --------
    >>> syn = dirichlet_multinomial_synthesizer_prior(np.log(11), n_synthetic=5, n_categories=3)
    >>> [round(a, 4) for a in syn.alpha]
    [0.5, 0.5, 0.5]
    >>> syn = dirichlet_multinomial_synthesizer_prior(1.0, 5, prior_mean=[0.2, 0.3, 0.5])
    >>> [round(a, 4) for a in syn.alpha], round(syn.epsilon, 4)
    ([2.9099, 4.3648, 7.2747], 1.0)
    """
    a_min, n_s = _smallest_parameter(epsilon, n_synthetic)
    if (n_categories is None) == (prior_mean is None):
        raise ValueError("Give exactly one of `n_categories` and `prior_mean`.")
    if prior_mean is None:
        k = check_int(n_categories, "n_categories", 2)
        alpha = (a_min,) * k
    else:
        m = np.asarray(prior_mean, dtype=float)
        if m.ndim != 1 or m.size < 2 or np.any(~(m > 0)) or not np.isclose(m.sum(), 1.0):
            raise ValueError("`prior_mean` must be >= 2 positive values summing to 1.")
        alpha = tuple(a_min * m / m.min())
    return DirichletMultinomialSynthesizer(alpha=alpha, n_synthetic=n_s)


@dataclass(frozen=True)
class LaplaceMechanism:
    """Laplace mechanism: release ``f(D) + Laplace(0, b)`` with ``b = sensitivity / eps``.

    Parameters
    ----------
    sensitivity : float
        Global L1 sensitivity ``Delta f`` of the query.
    epsilon : float
        DP epsilon; the density ratio between neighbours is at most ``e^eps``.

    References
    ----------
    .. [1] Dwork, C., McSherry, F., Nissim, K. and Smith, A. (2006). "Calibrating noise to
       sensitivity in private data analysis." *TCC 2006*, 265-284.
    .. [2] Lee, J. and Clifton, C. (2011). "How Much Is Enough? Choosing epsilon for
       Differential Privacy." *ISC 2011*, LNCS 7001, Sec. 3.

    Examples
    --------
    >>> mech = LaplaceMechanism(sensitivity=1.0, epsilon=0.5)
    >>> mech.scale
    2.0
    >>> outputs = np.linspace(-10, 11, 211)  # neighbouring query values 0 and 1
    >>> loss = mech.log_density(outputs, 0.0) - mech.log_density(outputs, 1.0)
    >>> round(float(np.abs(loss).max()), 4)
    0.5
    """

    sensitivity: float
    epsilon: float

    def __post_init__(self):
        object.__setattr__(
            self, "sensitivity", check_real(self.sensitivity, "sensitivity", positive=True)
        )
        object.__setattr__(self, "epsilon", check_real(self.epsilon, "epsilon", positive=True))

    @property
    def scale(self) -> float:
        """Laplace scale ``b = Delta f / eps``."""
        return self.sensitivity / self.epsilon

    def log_density(self, output, value) -> np.ndarray:
        """Log density of releasing ``output`` when the true query value is ``value``."""
        b = self.scale
        diff = np.asarray(output, dtype=float) - np.asarray(value, dtype=float)
        return -np.abs(diff) / b - np.log(2.0 * b)

    def build_model(self, value: float | np.ndarray) -> pm.Model:
        """PyMC model releasing ``released ~ Laplace(value, scale)`` (elementwise)."""
        import pymc as pm

        v = np.asarray(value, dtype=float)
        with pm.Model() as model:
            pm.Laplace("released", mu=v, b=self.scale, shape=v.shape)
        return model


def laplace_mechanism(epsilon: float, sensitivity: float) -> LaplaceMechanism:
    """:class:`LaplaceMechanism` calibrated to ``epsilon``: scale ``sensitivity / epsilon``.

    References
    ----------
    .. [1] Dwork, C., McSherry, F., Nissim, K. and Smith, A. (2006). *TCC 2006*, 265-284.

    Examples
    --------
    Lee & Clifton's mean of absence days ``{1, 2, 3, 10}`` (sensitivity 17/6) at eps = 2:

    >>> mech = laplace_mechanism(epsilon=2.0, sensitivity=17 / 6)
    >>> round(mech.scale, 4)  # Laplace(17/12)
    1.4167
    """
    return LaplaceMechanism(sensitivity=float(sensitivity), epsilon=float(epsilon))
