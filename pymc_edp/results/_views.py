"""The accessor between the results and the functions that read them.

The result classes sit below the report and the figures, so they cannot import them; their
convenience methods (``res.interval()``, ``res.plot()``, ``repr(res)``, ...) call
:func:`call` with a view's name instead, and :mod:`pymc_edp.views` (above the diagnostics,
the report and the plots) registers the function behind every name with :func:`register`
when ``pymc_edp`` is imported.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

__all__ = ["ViewNotRegisteredError", "call", "register", "registered"]

F = TypeVar("F", bound=Callable[..., Any])

_REGISTRY: dict[str, Callable[..., Any]] = {}


class ViewNotRegisteredError(LookupError):
    """No function is registered under a view's name (``pymc_edp.views`` was not imported).

    Examples
    --------
    >>> from pymc_edp.results._views import ViewNotRegisteredError, call
    >>> try:
    ...     call("no such view", object())
    ... except ViewNotRegisteredError as err:
    ...     print(str(err)[:40])
    no function is registered for the view '
    """


def register(name: str) -> Callable[[F], F]:
    """A decorator registering a function as the view ``name`` (a later one replaces it).

    Parameters
    ----------
    name : str
        The view's name, e.g. ``"interval"`` for ``EDPResult.interval``.

    Returns
    -------
    callable
        The decorator; it returns the function unchanged.

    Examples
    --------
    >>> from pymc_edp.results._views import call, register
    >>> @register("doc_example_double")
    ... def double(obj, factor=2):
    ...     return obj * factor
    >>> call("doc_example_double", 21)
    42
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"a view's name is a non-empty string, not {name!r}")

    def decorator(function: F) -> F:
        if not callable(function):
            raise TypeError(f"view {name!r}: {function!r} is not callable")
        _REGISTRY[name] = function
        return function

    return decorator


def call(name: str, obj: Any, *args: Any, **kwargs: Any) -> Any:
    """Call the function registered as view ``name`` with ``obj`` and the other arguments.

    Parameters
    ----------
    name : str
    obj : object
        The result the view reads (its first argument).
    *args, **kwargs
        Passed on.

    Returns
    -------
    object
        What the view returns.

    Raises
    ------
    ViewNotRegisteredError
        If no function is registered under ``name``.

    Examples
    --------
    >>> import pymc_edp  # registers the views of the results
    >>> from pymc_edp.results._views import call
    >>> res = pymc_edp.audit(load_eight_schools(), var_names="mu", bins=10, method="psis",
    ...                      progressbar=False)
    >>> call("interval", res, 0.9).equals(res.interval(0.9))
    True
    """
    try:
        function = _REGISTRY[name]
    except KeyError:
        raise ViewNotRegisteredError(
            f"no function is registered for the view {name!r} of {type(obj).__name__}: "
            "import pymc_edp (or pymc_edp.views), which registers the diagnostics, the report "
            "and the plots behind the results' methods"
        ) from None
    return function(obj, *args, **kwargs)


def registered() -> dict[str, Callable[..., Any]]:
    """A copy of the registry: ``{view name: function}``.

    Examples
    --------
    >>> import pymc_edp
    >>> from pymc_edp.results._views import registered
    >>> registered()["interval"] is pymc_edp.diagnostics.epsilon_interval
    True
    """
    return dict(_REGISTRY)
