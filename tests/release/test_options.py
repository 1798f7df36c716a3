"""ReleaseOptions: defaults, coercion and checks."""

import pytest

from pymc_edp.release.options import ReleaseOptions


def test_defaults_and_coercion():
    assert ReleaseOptions().n_outputs == 1000
    assert ReleaseOptions.coerce({"top": 3}).top == 3
    assert ReleaseOptions.coerce(None) == ReleaseOptions()


@pytest.mark.parametrize(
    ("field", "value", "match"),
    [("n_outputs", 1, "n_outputs"), ("prob", 1.5, "prob"), ("accuracy", 0, "accuracy")],
)
def test_bad_values_are_named(field, value, match):
    with pytest.raises(ValueError, match=match):
        ReleaseOptions(**{field: value})


def test_unknown_keys_are_named():
    with pytest.raises(TypeError, match="bogus"):
        ReleaseOptions.coerce({"bogus": 1})
