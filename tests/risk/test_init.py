"""The package pymc_edp.risk re-exports every public name of its per-paper modules."""

import importlib

import pytest

import pymc_edp
import pymc_edp.risk as risk

MODULES = ["bailie_gong", "charest_han", "lee_clifton", "mcclure_reiter"]


def test_all_is_the_union_of_the_modules():
    names = []
    for module in MODULES:
        names += importlib.import_module(f"pymc_edp.risk.{module}").__all__
    assert sorted(risk.__all__) == sorted(names)
    assert len(set(names)) == len(names)  # each name lives in exactly one module


@pytest.mark.parametrize("module", MODULES)
def test_reexports_are_the_module_objects(module):
    mod = importlib.import_module(f"pymc_edp.risk.{module}")
    for name in mod.__all__:
        assert getattr(risk, name) is getattr(mod, name)
        assert getattr(pymc_edp.risk, name) is getattr(mod, name)
