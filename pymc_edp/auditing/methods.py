"""How an audit estimates its neighbour posteriors: one object per method.

A method says whether neighbours are moment-matched (and how), which are refitted, whether
the headline is verified by refits (and how) and, when it is not, why.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import ClassVar

from pymc_edp.model.moment_match import MomentMatchOptions
from pymc_edp.refit.options import VerifyOptions

__all__ = ["METHODS", "PRUNE_NEEDS_REWEIGHTING", "Auto", "Method", "MomentMatch", "Psis", "Refit"]

#: Why ``ChunkOptions(prune=True)`` is refused without reweighting.
PRUNE_NEEDS_REWEIGHTING = (
    "ChunkOptions(prune=True) needs reweighting: a factorised likelihood, not method='refit'"
)

#: Methods by name (``method="auto"``): every subclass of :class:`Method` with a name.
METHODS: dict[str, type[Method]] = {}


@dataclass(frozen=True)
class Method:
    """How an audit estimates its neighbour posteriors (subclass to add a method).

    A subclass sets ``name`` and the class flags, and overrides :attr:`moment_match`,
    :attr:`verify` and :meth:`check` where it differs (docs: "Adding an audit method").

    Examples
    --------
    >>> method = edp.Method.coerce("auto")
    >>> type(method).__name__, method.refits, method.verify.top
    ('Auto', True, 5)
    """

    name: ClassVar[str] = ""
    #: Every neighbour is refitted (no reweighting).
    refits_all: ClassVar[bool] = False
    #: Neighbours whose k-hat stays above the threshold are refitted (with a model).
    refits_unreliable: ClassVar[bool] = False
    #: Why the headline is not verified by refits (None: it is, see :attr:`verify`).
    unverified: ClassVar[str | None] = None

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        if cls.name:
            METHODS[cls.name] = cls

    @classmethod
    def coerce(cls, value: Method | str | None) -> Method:
        """``value`` as a method: a method, or its name (None: :class:`Auto`)."""
        if value is None:
            return Auto()
        if isinstance(value, Method):
            return value
        if isinstance(value, str) and value in METHODS:
            return METHODS[value]()
        raise ValueError(
            f"method must be one of {tuple(METHODS)} or edp.Auto(...), edp.Psis(), "
            f"edp.MomentMatch(...), edp.Refit(), got {value!r}"
        )

    @property
    def refits(self) -> bool:
        """Whether any neighbour can be refitted."""
        return self.refits_all or self.refits_unreliable

    @property
    def moment_match(self) -> MomentMatchOptions | None:
        """How bad k-hat neighbours are moment-matched; None: they are not."""
        return None

    @property
    def verify(self) -> VerifyOptions | None:
        """How the headline is verified by refits; None: it is not (:attr:`unverified`)."""
        return None

    def check(self, model, build_model, prune: bool | None) -> None:
        """Refuse, before any work, what this method cannot do without the model."""
        if self.refits_all and model is None and build_model is None:
            raise ValueError(
                f"method={self.name!r} needs the model (model=) or a builder "
                "(refit=RefitOptions(build_model=...)) to refit the neighbour datasets"
            )
        if self.refits_all and prune:
            raise ValueError(PRUNE_NEEDS_REWEIGHTING)


@dataclass(frozen=True)
class Psis(Method):
    """Pareto-smoothed importance reweighting of the draws only [1]_.

    References
    ----------
    .. [1] Vehtari, A., Simpson, D., Gelman, A., Yao, Y. and Gabry, J. "Pareto smoothed
       importance sampling." Journal of Machine Learning Research 25(72), 2024.

    Examples
    --------
    >>> edp.Psis().name, edp.Psis().verify is None
    ('psis', True)
    """

    name: ClassVar[str] = "psis"
    unverified: ClassVar[str] = "unverified: method='psis' reweights only"


def _match_options(value) -> MomentMatchOptions | None:
    if value is False:
        return None
    return MomentMatchOptions.coerce(None if value is True else value)


@dataclass(frozen=True, init=False)
class MomentMatch(Method):
    """Reweighting, with the neighbours whose k-hat is too high moment-matched [1]_.

    Parameters
    ----------
    options : MomentMatchOptions or dict, optional
        How (:class:`pymc_edp.MomentMatchOptions`); its fields can also be given as
        keywords, ``MomentMatch(max_iters=5)``.

    References
    ----------
    .. [1] Paananen, T., Piironen, J., Bürkner, P.-C. and Vehtari, A. "Implicitly adaptive
       importance sampling." Statistics and Computing 31(2), 2021.

    Examples
    --------
    >>> edp.MomentMatch({"max_iters": 5}) == edp.MomentMatch(max_iters=5)
    True
    >>> edp.MomentMatch(max_iters=5).moment_match.max_iters
    5
    """

    options: MomentMatchOptions

    name: ClassVar[str] = "moment_match"
    unverified: ClassVar[str] = "unverified: method='moment_match' does not refit"

    def __init__(self, options: MomentMatchOptions | Mapping | None = None, **fields):
        options = MomentMatchOptions.coerce(options)
        if fields:  # MomentMatch(max_iters=5): the options' own fields
            options = MomentMatchOptions.coerce({**dataclasses.asdict(options), **fields})
        object.__setattr__(self, "options", options)

    @property
    def moment_match(self) -> MomentMatchOptions:
        """How bad k-hat neighbours are moment-matched."""
        return self.options

    def check(self, model, build_model, prune: bool | None) -> None:
        """Moment matching moves the draws with the model's joint density."""
        if model is None:
            raise ValueError(
                "method='moment_match' moves the draws with the model's joint density: pass model="
            )


@dataclass(frozen=True)
class Refit(Method):
    """Every neighbour refitted by MCMC (the reference; Charest & Han's estimator [1]_).

    References
    ----------
    .. [1] Charest, A.-S. and Han, Y. "On the Meaning and Limits of Empirical Differential
       Privacy." Journal of Privacy and Confidentiality 7(3), 2017.

    Examples
    --------
    >>> edp.Refit().refits_all
    True
    """

    name: ClassVar[str] = "refit"
    refits_all: ClassVar[bool] = True
    unverified: ClassVar[str] = "every neighbour refitted (method='refit')"


@dataclass(frozen=True)
class Auto(Method):
    """Reweight, moment-match what k-hat distrusts, refit what is left, verify the headline.

    Without a model or a builder it reweights only, and warns.

    Parameters
    ----------
    match : bool, MomentMatchOptions or dict, default True
        Moment matching of bad k-hat neighbours before any refit
        (:class:`pymc_edp.MomentMatchOptions`); ``False`` refits them directly.
    verify : bool, VerifyOptions or dict, default True
        Confirm the headline by refitting the worst neighbours
        (:class:`pymc_edp.VerifyOptions`); ``False`` leaves it unverified.

    Examples
    --------
    >>> method = edp.Auto(verify={"top": 3}, match=False)
    >>> method.verify.top, method.moment_match
    (3, None)
    """

    match: bool | MomentMatchOptions | Mapping | None = True
    verify: bool | VerifyOptions | Mapping | None = True  # type: ignore[assignment]

    name: ClassVar[str] = "auto"
    refits_unreliable: ClassVar[bool] = True

    def __post_init__(self):
        # held as options, or None when turned off (False)
        object.__setattr__(self, "match", _match_options(self.match))
        verify = None if self.verify is False else self.verify
        if verify is not None:
            verify = VerifyOptions.coerce(None if verify is True else verify)
        object.__setattr__(self, "verify", verify)

    @property
    def moment_match(self) -> MomentMatchOptions | None:
        """How bad k-hat neighbours are moment-matched; None with ``match=False``."""
        return self.match

    @property
    def unverified(self) -> str | None:
        """Why the headline is not verified: only when ``verify=False``."""
        if self.verify is None:
            return "unverified: verification turned off (edp.Auto(verify=False))"
        return None
