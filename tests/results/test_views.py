"""The accessor between the results and their views (:mod:`pymc_edp.results._views`)."""

import pytest
from support import tuning_result

from pymc_edp.results import _views
from pymc_edp.results._views import ViewNotRegisteredError, call, register, registered


@pytest.fixture
def clean_registry(monkeypatch):
    monkeypatch.setattr(_views, "_REGISTRY", {})


def test_register_and_call(clean_registry):
    @register("triple")
    def triple(obj, factor=3, *, plus=0):
        return obj * factor + plus

    assert triple(2) == 6  # the decorator returns the function unchanged
    assert call("triple", 2) == 6
    assert call("triple", 2, 4, plus=1) == 9
    assert registered() == {"triple": triple}
    registered().clear()  # a copy
    assert "triple" in registered()


def test_a_later_registration_replaces(clean_registry):
    register("v")(lambda obj: 1)
    register("v")(lambda obj: 2)
    assert call("v", None) == 2


def test_nothing_registered_is_a_clear_error(clean_registry):
    with pytest.raises(
        ViewNotRegisteredError, match=r"view 'interval' of EDPResult.*import pymc_edp"
    ):
        call("interval", type("EDPResult", (), {})())
    assert issubclass(ViewNotRegisteredError, LookupError)


def test_bad_registrations_are_refused(clean_registry):
    with pytest.raises(TypeError, match="non-empty string"):
        register("")
    with pytest.raises(TypeError, match="not callable"):
        register("x")(42)


def test_results_without_views_still_print(clean_registry):
    """repr never raises: without pymc_edp.views a result prints as one plain line."""
    res = tuning_result(hyperparameter="s", initial_value=1.0, initial_epsilon=0.5)
    assert repr(res) == "PriorTuningResult(value=1.2, epsilon=0.31, target_epsilon=0.3)"
    with pytest.raises(ViewNotRegisteredError):
        res._repr_html_()


def test_an_audit_without_views(clean_registry, tiny_audit):
    assert repr(tiny_audit).startswith("EDPResult(epsilon=")
    with pytest.raises(ViewNotRegisteredError, match="'interval'"):
        tiny_audit.interval()
    with pytest.raises(ViewNotRegisteredError, match="'plot'"):
        tiny_audit.plot()


@pytest.fixture
def tiny_audit():
    import numpy as np
    from support import normal_audit, normal_draws

    return normal_audit(normal_draws(np.random.default_rng(0), 1, 400), bins=5)
