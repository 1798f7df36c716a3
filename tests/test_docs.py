"""Docstring examples run, and every public function has one.

* ``test_docstring_examples`` runs every ``>>>`` example in every ``pymc_edp`` module with
  :mod:`doctest` (one test per documented object), so an example that no longer runs, or
  prints something else, fails the suite.
* ``test_public_functions_have_examples`` is a ratchet: every public function and class
  (the names in a public module's ``__all__``, and the public methods of
  :class:`pymc_edp.EDPResult`) must have an ``Examples`` section with a ``>>>`` example,
  except those still listed in ``MISSING_EXAMPLES``. Adding an example to a listed object
  makes the test fail until the object is removed from the list, so the list only shrinks.

The executed notebooks and documentation pages are checked by ``scripts/build_docs.sh``.
"""

from __future__ import annotations

import doctest
import importlib
import inspect
import pkgutil

import pytest

import pymc_edp

matplotlib = pytest.importorskip("matplotlib")
matplotlib.use("Agg")

PUBLIC_MODULES = [
    "pymc_edp",
    "pymc_edp.calibration",
    "pymc_edp.cli",
    "pymc_edp.conjugate",
    "pymc_edp.datasets",
    "pymc_edp.diagnostics",
    "pymc_edp.plots",
    "pymc_edp.query",
    "pymc_edp.refit",
    "pymc_edp.risk",
    "pymc_edp.tuning",
]

# Public objects without a ``>>>`` example yet. Remove a name once its example is added.
MISSING_EXAMPLES: set[str] = {
    "pymc_edp.EDPResult",
    "pymc_edp.EDPResult.bin_log_ratios",
    "pymc_edp.EDPResult.continuous_limit",
    "pymc_edp.EDPResult.curve",
    "pymc_edp.EDPResult.delta_profile",
    "pymc_edp.EDPResult.diagnose",
    "pymc_edp.EDPResult.emi",
    "pymc_edp.EDPResult.empty_bins",
    "pymc_edp.EDPResult.from_dataset",
    "pymc_edp.EDPResult.from_netcdf",
    "pymc_edp.EDPResult.interval",
    "pymc_edp.EDPResult.mcse",
    "pymc_edp.EDPResult.most_exposed",
    "pymc_edp.EDPResult.n_neighbours",
    "pymc_edp.EDPResult.plot_bin_log_ratios",
    "pymc_edp.EDPResult.plot_curve",
    "pymc_edp.EDPResult.plot_delta_profile",
    "pymc_edp.EDPResult.plot_intervals",
    "pymc_edp.EDPResult.plot_neighbour_posterior",
    "pymc_edp.EDPResult.smoothing_sensitivity",
    "pymc_edp.EDPResult.summary",
    "pymc_edp.EDPResult.to_dataset",
    "pymc_edp.EDPResult.to_netcdf",
    "pymc_edp.EDPResult.worst_neighbour",
    "pymc_edp.PriorTuningResult",
    "pymc_edp.calibration.BernoulliSynthesizer",
    "pymc_edp.calibration.BetaBinomialSynthesizer",
    "pymc_edp.calibration.DirichletMultinomialSynthesizer",
    "pymc_edp.calibration.LaplaceMechanism",
    "pymc_edp.calibration.bernoulli_synthesizer_prior",
    "pymc_edp.calibration.beta_binomial_synthesizer_prior",
    "pymc_edp.calibration.dirichlet_multinomial_synthesizer_prior",
    "pymc_edp.calibration.laplace_mechanism",
    "pymc_edp.cli.build_parser",
    "pymc_edp.cli.fit_demo_model",
    "pymc_edp.cli.main",
    "pymc_edp.conjugate.beta_binomial_edp",
    "pymc_edp.conjugate.beta_binomial_synthesizer_matrix",
    "pymc_edp.conjugate.normal_normal_edp",
    "pymc_edp.conjugate.normal_normal_posterior",
    "pymc_edp.datasets.dataset_path",
    "pymc_edp.datasets.heart_transplant_model",
    "pymc_edp.datasets.heart_transplant_provenance",
    "pymc_edp.diagnostics.bin_log_ratios",
    "pymc_edp.diagnostics.continuous_limit",
    "pymc_edp.diagnostics.delta_profile",
    "pymc_edp.diagnostics.diagnose",
    "pymc_edp.diagnostics.emi",
    "pymc_edp.diagnostics.empty_bins",
    "pymc_edp.diagnostics.epsilon_curve",
    "pymc_edp.diagnostics.epsilon_interval",
    "pymc_edp.diagnostics.epsilon_mcse",
    "pymc_edp.diagnostics.smoothing_sensitivity",
    "pymc_edp.plots.khat_class",
    "pymc_edp.plots.plot_bin_log_ratios",
    "pymc_edp.plots.plot_delta_profile",
    "pymc_edp.plots.plot_epsilon_curve",
    "pymc_edp.plots.plot_epsilon_intervals",
    "pymc_edp.plots.plot_neighbour_posterior",
    "pymc_edp.plots.plot_pointwise_epsilon",
    "pymc_edp.query.DensityModel",
    "pymc_edp.query.MeanQuery",
    "pymc_edp.query.NoiseKernel",
    "pymc_edp.query.bottleneck_distance",
    "pymc_edp.query.check_noise",
    "pymc_edp.query.epsilon_at",
    "pymc_edp.query.hausdorff_distance",
    "pymc_edp.query.hockey_stick_delta",
    "pymc_edp.query.hockey_stick_delta_samples",
    "pymc_edp.query.independence_check",
    "pymc_edp.query.mean_query",
    "pymc_edp.query.noise_kernel",
    "pymc_edp.query.plot_delta",
    "pymc_edp.query.plot_delta_i",
    "pymc_edp.query.plot_densities",
    "pymc_edp.query.plot_noise_kernel",
    "pymc_edp.query.privacy_profile",
    "pymc_edp.query.query_samples",
    "pymc_edp.query.select_density",
    "pymc_edp.query.sum_query",
    "pymc_edp.refit.NeighbourData",
    "pymc_edp.refit.RefitOutcome",
    "pymc_edp.refit.Refits",
    "pymc_edp.refit.neighbour_model",
    "pymc_edp.refit.refit_seed",
    "pymc_edp.refit.run_refits",
    "pymc_edp.risk.AcceptableRegion",
    "pymc_edp.risk.DensityBounds",
    "pymc_edp.risk.DisclosureAssessment",
    "pymc_edp.risk.PossibleWorlds",
    "pymc_edp.risk.bailie_gong_posterior_bounds",
    "pymc_edp.risk.bailie_gong_power_bound",
    "pymc_edp.risk.bailie_gong_prior_predictive_bounds",
    "pymc_edp.risk.conditional_dp_distribution",
    "pymc_edp.risk.conditional_dp_epsilon",
    "pymc_edp.risk.dp_epsilon",
    "pymc_edp.risk.hamming_distances",
    "pymc_edp.risk.lee_clifton_epsilon_bound",
    "pymc_edp.risk.lee_clifton_max_epsilon",
    "pymc_edp.risk.lee_clifton_risk",
    "pymc_edp.risk.lee_clifton_sensitivity",
    "pymc_edp.risk.lee_clifton_worst_case_belief",
    "pymc_edp.risk.mcclure_reiter_assessment",
    "pymc_edp.risk.mcclure_reiter_expected_risk",
    "pymc_edp.risk.mcclure_reiter_relative_risk",
    "pymc_edp.risk.mcclure_reiter_risk",
    "pymc_edp.risk.possible_world_beliefs",
    "pymc_edp.risk.possible_worlds",
    "pymc_edp.tuning.bootstrap_epsilon_mcse",
}

OPTIONFLAGS = doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE


def _all_modules() -> list[str]:
    names = ["pymc_edp"]
    for info in pkgutil.walk_packages(pymc_edp.__path__, prefix="pymc_edp."):
        names.append(info.name)
    return sorted(names)


def _doctests():
    finder = doctest.DocTestFinder(exclude_empty=True)
    tests = []
    for name in _all_modules():
        try:
            module = importlib.import_module(name)
        except ImportError:  # an optional dependency of one module
            continue
        for test in finder.find(module, name):
            if test.examples:
                tests.append(test)
    return sorted(tests, key=lambda t: t.name)


DOCTESTS = _doctests()


@pytest.mark.skipif(not DOCTESTS, reason="no docstring examples yet")
@pytest.mark.parametrize("test", DOCTESTS, ids=[t.name for t in DOCTESTS])
def test_docstring_examples(test, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)  # examples may write files
    runner = doctest.DocTestRunner(optionflags=OPTIONFLAGS)
    test.globs = dict(test.globs)
    result = runner.run(test, out=lambda s: print(s, end=""))
    import matplotlib.pyplot as plt

    plt.close("all")
    assert result.failed == 0, f"{result.failed} of {result.attempted} examples failed"


def public_objects() -> dict[str, object]:
    """Qualified name -> object for every public function, class and EDPResult method."""
    out: dict[str, object] = {}
    for name in PUBLIC_MODULES:
        module = importlib.import_module(name)
        for attr in getattr(module, "__all__", []):
            obj = getattr(module, attr)
            if inspect.ismodule(obj) or not (inspect.isfunction(obj) or inspect.isclass(obj)):
                continue
            if inspect.isclass(obj) and issubclass(obj, Warning):
                continue
            if any(obj is seen for seen in out.values()):  # re-exported: listed once
                continue
            out[f"{name}.{attr}"] = obj
    for attr, member in vars(pymc_edp.EDPResult).items():
        if attr.startswith("_"):
            continue
        if isinstance(member, property):
            member = member.fget
        elif isinstance(member, classmethod | staticmethod):
            member = member.__func__
        if inspect.isfunction(member):
            out[f"pymc_edp.EDPResult.{attr}"] = member
    return out


def has_example(obj) -> bool:
    return ">>>" in (inspect.getdoc(obj) or "")


def test_public_functions_have_examples():
    objects = public_objects()
    missing = {name for name, obj in objects.items() if not has_example(obj)}
    new = sorted(missing - MISSING_EXAMPLES)
    done = sorted(MISSING_EXAMPLES & (set(objects) - missing))
    gone = sorted(MISSING_EXAMPLES - set(objects))
    msg = []
    if new:
        msg.append("public objects without a '>>>' example:\n  " + "\n  ".join(new))
    if done:
        msg.append(
            "now have an example; remove them from MISSING_EXAMPLES:\n  " + "\n  ".join(done)
        )
    if gone:
        msg.append("no longer public; remove them from MISSING_EXAMPLES:\n  " + "\n  ".join(gone))
    assert not msg, "\n".join(msg)
