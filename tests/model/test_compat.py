"""The compatibility layer: both stacks, both containers, the same numbers."""

import builtins
import subprocess
import sys

import numpy as np
import pytest
import xarray as xr
from scipy import stats
from support import NOT_CONVERGED

import pymc_edp as edp
from pymc_edp.model.compat import (
    ARVIZ_1,
    from_dict,
    get_group,
    group_names,
    import_arviz,
    load_in_memory,
    make_container,
    stack_loo,
)


def _stack_khat(data):
    """The stack's own PSIS-LOO Pareto k-hats, flattened."""
    return np.asarray(stack_loo(data).pareto_k).ravel()


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


def test_stack_container_type():
    import arviz as az

    obj = from_dict({"posterior": {"mu": np.zeros((2, 10))}})
    if ARVIZ_1:
        assert isinstance(obj, xr.DataTree)
    else:
        assert isinstance(obj, az.InferenceData)
    assert group_names(obj) == ["posterior"]
    assert isinstance(get_group(obj, "posterior"), xr.Dataset)
    with pytest.raises(KeyError, match="no 'nope' group.*posterior"):
        get_group(obj, "nope")
    with pytest.raises(TypeError, match="DataTree.*InferenceData"):
        group_names({"posterior": None})


def _audits(data):
    """psis and replace-free audits whose every number is compared across containers."""
    return edp.audit(data, bins=10, method="psis", progressbar=False)


def _assert_identical(a, b):
    assert a.epsilon == pytest.approx(b.epsilon, rel=1e-12, abs=1e-12)
    for name in ("epsilon", "pareto_k"):
        np.testing.assert_allclose(a.pointwise[name], b.pointwise[name], rtol=1e-12, atol=1e-12)
    for name, node in a.parameters.children.items():
        other = b.parameters[name]["epsilon_neighbour"]
        np.testing.assert_allclose(node["epsilon_neighbour"], other, rtol=1e-12, atol=1e-12)
    for name in ("worst_bin", "worst_parameter"):
        np.testing.assert_array_equal(a.pointwise[name], b.pointwise[name])
    np.testing.assert_array_equal(a.pointwise["neighbour"], b.pointwise["neighbour"])


@NOT_CONVERGED
def test_datatree_and_inferencedata_give_identical_audits():
    """ArviZ's centered eight schools, given as the stack's container and converted.

    On ArviZ 0.23: its InferenceData and the DataTree ``idata.to_datatree()`` gives. On 1.x
    (no InferenceData class any more): arviz_base's DataTree and the same groups rebuilt as a
    plain ``xarray.DataTree``. Note that arviz_base ships other draws of this data set than
    ArviZ 0.23, so the numbers differ between the stacks, not between the containers.
    """
    import arviz as az

    native = az.load_arviz_data("centered_eight")
    if ARVIZ_1:
        other = xr.DataTree.from_dict({g: get_group(native, g) for g in group_names(native)})
    else:
        other = native.to_datatree()
        assert isinstance(other, xr.DataTree)
    a, b = _audits(native), _audits(other)
    _assert_identical(a, b)
    # the k-hats are the stack's own PSIS-LOO k-hats on the same object
    np.testing.assert_allclose(a.pointwise["pareto_k"], _stack_khat(native), rtol=0, atol=1e-10)
    np.testing.assert_allclose(b.pointwise["pareto_k"], _stack_khat(native), rtol=0, atol=1e-10)


def _whole_lazy(native, tmp_path):
    """The fit as a user opens it lazily as a whole: every group dask-backed."""
    if ARVIZ_1:
        path = tmp_path / "fit.nc"
        xr.DataTree.from_dict({g: get_group(native, g) for g in group_names(native)}).to_netcdf(
            path
        )
        return xr.open_datatree(path, chunks={})
    return make_container({g: get_group(native, g).chunk() for g in group_names(native)})


@NOT_CONVERGED
def test_a_fit_opened_lazily_as_a_whole_is_audited_like_the_loaded_one(tmp_path):
    """``xr.open_datatree(path, chunks={})`` crashed inside ArviZ's ESS (issue 21, item 12)."""
    import arviz as az

    native = az.load_arviz_data("centered_eight")
    lazy = _whole_lazy(native, tmp_path)
    assert get_group(lazy, "posterior")["mu"].chunks is not None
    loaded = load_in_memory(lazy)
    for g in group_names(lazy):
        chunked = [v.chunks is not None for v in get_group(loaded, g).data_vars.values()]
        # the large group stays lazy, read chunk by chunk; the others are in memory
        assert all(chunked) if g == "log_likelihood" else not any(chunked), g
    assert get_group(lazy, "posterior")["mu"].chunks is not None  # the input is not changed
    assert load_in_memory(native) is native  # nothing chunked: nothing copied
    _assert_identical(_audits(lazy), _audits(native))


def test_khat_equals_stack_loo_on_many_records(rng):
    """Heavier tails and a realistic layout: 2 chains x 1,500 draws, 40 records."""
    y = np.append(rng.normal(0, 1, 38), [6.0, -7.0])
    mu = rng.normal(y.mean(), 1 / np.sqrt(40), (2, 1500))
    ll = stats.norm.logpdf(y, mu[..., None], 1.0)
    data = from_dict({"posterior": {"mu": mu}, "log_likelihood": {"y": ll}})
    res = _audits(data)
    np.testing.assert_allclose(res.pointwise["pareto_k"], _stack_khat(data), rtol=0, atol=1e-10)


def test_refits_come_back_in_the_stack_container():
    from pymc_edp.refit import RefitOutcome, Refits

    post = xr.Dataset({"mu": (("chain", "draw"), np.zeros((1, 4)))})
    refits = Refits({0: RefitOutcome(0, "a", "ok", "", 11, 0.5, post)})
    assert type(refits["a"]) is type(make_container({"posterior": post}))


def test_no_private_arviz_names_in_the_package():
    """Only public ArviZ / arviz_base / arviz_stats names (no ``arviz.*._name``)."""
    import pathlib
    import re

    pkg = pathlib.Path(edp.__file__).parent
    pattern = re.compile(r"(arviz\w*)(\.\w+)*\._[a-z]\w*|from arviz\w*(\.\w+)* import _")
    hits = [
        f"{p.name}:{i}"
        for p in pkg.rglob("*.py")
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if pattern.search(line) and "``" not in line  # docs may name what they mirror
    ]
    assert hits == []


@pytest.mark.slow
@pytest.mark.both_stacks
def test_install_does_not_downgrade_the_stack(tmp_path):
    """``pip install --dry-run`` of this checkout into the current environment changes none
    of the PyMC stack's packages (no upper pins that exclude what is installed)."""
    import json
    import pathlib

    root = pathlib.Path(__file__).resolve().parents[2]
    report = tmp_path / "report.json"
    cmd = [sys.executable, "-m", "pip", "install", "--dry-run", "--quiet"]
    cmd += ["--report", str(report), str(root)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    if proc.returncode != 0:
        pytest.fail(f"pip install --dry-run failed:\n{proc.stderr[-2000:]}")
    installs = json.loads(report.read_text())["install"]
    touched = {i["metadata"]["name"].lower(): i["metadata"]["version"] for i in installs}
    touched.pop("pymc-edp", None)
    stack = {"pymc", "arviz", "pytensor", "numpy", "xarray", "arviz-base", "arviz-stats"}
    assert not (stack & set(touched)), f"installing pymc_edp would change {touched}"


# ------------------------------------------------------------------ PyMC models (issue 31)
def test_observed_data_reads_every_form_of_observed_values():
    """A literal array, a float pm.Data and an int pm.Data cast to the likelihood's dtype."""
    import pymc as pm

    from pymc_edp.model.compat import observed_data

    with pm.Model() as model:
        y_int = pm.Data("y_int", np.array([0, 1, 1]))
        y_float = pm.Data("y_float", np.array([0.5, 1.5]))
        p = pm.Beta("p", 1.0, 1.0)
        pm.Bernoulli("a", p, observed=y_int)
        pm.Normal("b", p, 1.0, observed=y_float)
        pm.Poisson("c", p, observed=np.array([2, 3]))
    assert type(model.rvs_to_values[model["a"]]).__name__ == "TensorVariable"  # a cast
    np.testing.assert_array_equal(observed_data(model, "a"), [0, 1, 1])
    np.testing.assert_array_equal(observed_data(model, "b"), [0.5, 1.5])
    np.testing.assert_array_equal(observed_data(model, "c"), [2, 3])
    with model:
        pm.set_data({"y_int": np.array([1, 0, 0])})
    np.testing.assert_array_equal(observed_data(model, "a"), [1, 0, 0])  # current values
    assert observed_data(model, "p") is None and observed_data(model, "nothing") is None


def test_without_initial_values_lets_pymc_rewrite_and_keeps_the_model():
    import pymc as pm
    from pymc.model.fgraph import clone_model
    from pymc.model.transform.conditioning import remove_value_transforms

    from pymc_edp.model.compat import initial_values, without_initial_values

    with pm.Model() as model:
        mu = pm.Normal(
            "mu",
            np.zeros(2),
            10.0,
            initval=[-1.0, 1.0],
            transform=pm.distributions.transforms.ordered,
        )
        pm.Normal("y", mu.sum(), 1.0, observed=[0.3, 0.1])
    with pytest.raises(NotImplementedError, match="initial_values"):
        clone_model(model)
    view = without_initial_values(model)
    assert remove_value_transforms(view)["mu"] is not None
    clone = clone_model(view)
    assert clone.rvs_to_initial_values[clone["mu"]] is None
    np.testing.assert_array_equal(initial_values(model)["mu"], [-1.0, 1.0])
    np.testing.assert_array_equal(model.rvs_to_initial_values[model["mu"]], [-1.0, 1.0])
    assert without_initial_values(clone) is clone
