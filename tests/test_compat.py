import builtins

import pytest

from pymc_edp._compat import import_arviz


def test_arviz_matplotlib_trap_gives_actionable_error(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "arviz":
            raise AttributeError("module 'matplotlib.style' has no attribute 'core'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(ImportError, match=r'pip install "matplotlib<3.11"') as info:
        import_arviz()
    assert "pip uninstall arviz-plots" in str(info.value)
    assert isinstance(info.value.__cause__, AttributeError)


def test_other_attribute_errors_propagate(monkeypatch):
    real_import = builtins.__import__

    def fake_import(name, *args, **kwargs):
        if name == "arviz":
            raise AttributeError("something unrelated")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", fake_import)
    with pytest.raises(AttributeError, match="unrelated"):
        import_arviz()


def test_import_arviz_works():
    assert import_arviz().__name__ == "arviz"
