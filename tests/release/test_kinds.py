"""Release kinds: their names, a new kind, bootstrap counts and binning of statistics."""

import numpy as np
import pytest

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools
from pymc_edp.release.atoms import binned_atoms
from pymc_edp.release.auditing import block_counts
from pymc_edp.release.kinds import (
    DatasetRelease,
    DrawsRelease,
    Pair,
    ReleaseKind,
    StatisticRelease,
    _cut,
    release_kind,
)


def test_block_counts_resample_within_chains():
    rng = np.random.default_rng(0)
    c = block_counts(3, 100, 5, rng)
    assert c.shape == (300,)
    np.testing.assert_array_equal(c.reshape(3, 100).sum(axis=1), 100)


def test_statistics_keep_few_distinct_values_and_cut_many_equally():
    b, n = _cut(np.array([3.0, 1.0, 3.0, 2.0]), 20)
    assert n == 3 and b.tolist() == [2, 0, 2, 1]
    b, n = _cut(np.random.default_rng(1).normal(size=1000), 10)
    assert n == 10
    np.testing.assert_allclose(np.bincount(b), 100, atol=1)


def test_a_draws_replicate_with_unit_counts_is_the_estimate():
    lr = np.random.default_rng(2).normal(size=40)
    pair = Pair(lr, np.full(40, 1 / 40))
    kind = DrawsRelease()
    a = kind.refined(pair, 0)
    b = kind.replicate(pair, np.ones(40), None)
    np.testing.assert_allclose(a.loss, b.loss)
    np.testing.assert_allclose(a.prob, b.prob)


def test_a_string_names_a_kind_and_a_statistic_makes_it_its_own():
    assert release_kind("draws") is DrawsRelease
    assert release_kind("synthetic") is DatasetRelease
    assert release_kind("synthetic", statistic=np.mean) is StatisticRelease
    assert release_kind(DrawsRelease) is DrawsRelease
    with pytest.raises(ValueError, match="release must be one of"):
        release_kind("posterior")


class RoundedDraw(ReleaseKind):
    """One posterior draw of the first parameter, rounded to an integer (docs/release.md)."""

    name = "rounded"
    publishes = "a posterior draw rounded to an integer"
    earlier = (DrawsRelease,)  # it post-processes a draw: res.comparison audits both

    def __init__(self, bin_of):
        self.bin_of = bin_of

    @classmethod
    def build(cls, inp, spec, opts, seed):
        # inp.draws: the audited parameters' draws, shape (n_parameters, n_draws)
        _, bin_of = np.unique(np.round(inp.draws[0]), return_inverse=True)
        return cls(bin_of)

    def atoms(self, log_ratio, weights, counts=None):
        # each value's mass under the full data and under each neighbour's weights
        return binned_atoms(self.bin_of, int(self.bin_of.max()) + 1, weights, counts)


@pytest.mark.filterwarnings("ignore::pymc_edp.EDPWarning")
def test_a_new_kind_is_one_class_the_audit_and_its_views_take(tmp_path):
    res = edp.audit_release(
        load_eight_schools(), release=RoundedDraw, k=5, delta=1e-3, progressbar=False,
        options={"n_bootstrap": 10}, random_seed=0,
    )  # fmt: skip
    assert res.release == "rounded" and res.publishes == RoundedDraw.publishes
    assert list(res.comparison["level"].values) == ["draws", "rounded"]
    worst = res.comparison["worst"]
    assert worst.sel(level="rounded") <= worst.sel(level="draws") + 1e-6
    assert "(rounded: a posterior draw rounded to an integer)" in repr(res)
    assert "rounded to an integer" in res._repr_html_()
    res.to_netcdf(tmp_path / "r.nc")
    back = edp.ReleaseResult.from_netcdf(tmp_path / "r.nc")
    assert repr(back) == repr(res)
