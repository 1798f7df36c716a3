"""Release kinds: bootstrap counts and binning of statistics."""

import numpy as np

from pymc_edp.release.kinds import DrawsRelease, Pair, _cut, block_counts


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
