"""Tests of pymc_edp.core.neighbours: which rows each record or individual changes."""

import numpy as np
import pytest
import support

from pymc_edp.core.loglik import LogLikelihood
from pymc_edp.core.neighbours import RELATIONS, Neighbours, neighbour_words


def loglik_dataset(rng):
    """:func:`support.loglik_dataset` with 5 draws and a ``year`` coordinate on ``chain``."""
    return support.loglik_dataset(rng, n_draws=5, year=("chain", [2020, 2021]))


class _Layout:
    """A record layout that is not a LogLikelihood: Neighbours needs only these members."""

    def __init__(self, ds):
        self.names = tuple(ds.data_vars)
        self.datasets = ds
        sizes = [int(np.prod([ds[n].sizes[d] for d in self.record_dims(n)])) for n in self.names]
        self.offsets = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)

    @property
    def n_rows(self):
        return int(self.offsets[-1])

    def record_dims(self, name):
        return [d for d in self.datasets[name].dims if d not in ("chain", "draw")]

    def row_labels(self):
        sizes = np.diff(self.offsets)
        return [
            f"{n}[{k}]" for n, size in zip(self.names, sizes, strict=True) for k in range(size)
        ]


def test_records_one_variable_uses_its_coordinate(rng):
    nbs = Neighbours.records(LogLikelihood.from_dataset(loglik_dataset(rng), ["y"]))
    assert len(nbs) == 6
    assert list(nbs.labels) == list("abcdef")
    np.testing.assert_array_equal(nbs.indptr, np.arange(7))
    np.testing.assert_array_equal(nbs.rows, np.arange(6))
    np.testing.assert_array_equal(nbs.n_rows, np.ones(6))
    np.testing.assert_array_equal(nbs.rows_of(4), [4])
    assert list(nbs.observed) == ["y"] * 6


def test_records_several_variables_use_row_labels(rng):
    nbs = Neighbours.records(LogLikelihood.from_dataset(loglik_dataset(rng)))
    assert len(nbs) == 12
    assert list(nbs.labels[5:8]) == ["y[f]", "z[0, 10]", "z[0, 20]"]
    assert nbs.labels[-1] == "z[1, 30]"
    assert list(nbs.observed) == ["y"] * 6 + ["z"] * 6
    np.testing.assert_array_equal(nbs.rows_of(11), [11])


def test_records_and_groups_need_only_the_record_layout(rng):
    layout = _Layout(loglik_dataset(rng))
    nbs = Neighbours.records(layout)
    assert nbs.labels[0] == "y[0]" and nbs.labels[6] == "z[0]"
    by_array = Neighbours.from_groups(layout, [0] * 6 + [1] * 6)
    np.testing.assert_array_equal(by_array.indptr, [0, 6, 12])
    assert list(by_array.observed) == ["y", "z"]


def test_groups_by_coordinate(rng):
    ll = LogLikelihood.from_dataset(loglik_dataset(rng), ["y"])
    nbs = Neighbours.from_groups(ll, "person")
    assert list(nbs.labels) == [1, 2, 3]
    np.testing.assert_array_equal(nbs.indptr, [0, 2, 4, 6])
    np.testing.assert_array_equal(nbs.rows_of(1), [2, 3])
    np.testing.assert_array_equal(nbs.n_rows, [2, 2, 2])
    # an array of the same labels gives the same rows
    by_array = Neighbours.from_groups(ll, [1, 1, 2, 2, 3, 3])
    np.testing.assert_array_equal(by_array.rows, nbs.rows)


def test_groups_in_order_of_first_appearance_with_string_labels(rng):
    ll = LogLikelihood.from_dataset(loglik_dataset(rng), ["y"])
    nbs = Neighbours.from_groups(ll, ["bo", "al", "bo", "cy", "al", "bo"])
    assert nbs.labels.dtype.kind == "U"
    assert list(nbs.labels) == ["bo", "al", "cy"]
    np.testing.assert_array_equal(nbs.n_rows, [3, 2, 1])
    np.testing.assert_array_equal(nbs.rows_of(0), [0, 2, 5])
    np.testing.assert_array_equal(nbs.rows_of(1), [1, 4])
    np.testing.assert_array_equal(nbs.rows_of(2), [3])


def test_groups_across_variables_by_mapping_and_by_coordinate(rng):
    ds = loglik_dataset(rng)
    ll = LogLikelihood.from_dataset(ds)
    # rows: y a..f are 0..5; z[row, col] is 6 + 3 * row + col index
    shared = Neighbours.from_groups(
        ll, {"y": [1, 1, 2, 2, 3, 3], "z": np.array([[1, 2, 3], [1, 2, 3]])}
    )
    np.testing.assert_array_equal(shared.n_rows, [4, 4, 4])
    assert list(shared.observed) == ["*", "*", "*"]
    np.testing.assert_array_equal(np.sort(shared.rows_of(0)), [0, 1, 6, 9])
    np.testing.assert_array_equal(np.sort(shared.rows_of(2)), [4, 5, 8, 11])
    z_only = Neighbours.from_groups(LogLikelihood.from_dataset(ds, ["z"]), "who")
    assert list(z_only.labels) == [1, 2, 3]
    np.testing.assert_array_equal(z_only.rows_of(1), [1, 4])
    assert list(z_only.observed) == ["z", "z", "z"]


def test_subset_keeps_the_rows_of_each_neighbour_in_the_order_asked(rng):
    ll = LogLikelihood.from_dataset(loglik_dataset(rng), ["y"])
    nbs = Neighbours.from_groups(ll, [1, 1, 2, 2, 2, 3])
    sub = nbs.subset([2, 0])
    assert list(sub.labels) == [3, 1]
    np.testing.assert_array_equal(sub.indptr, [0, 1, 3])
    np.testing.assert_array_equal(sub.rows, [5, 0, 1])
    assert len(nbs.subset(np.array([], dtype=int))) == 0
    records = Neighbours.records(ll).subset([4, 1])
    np.testing.assert_array_equal(records.rows, [4, 1])
    np.testing.assert_array_equal(records.indptr, [0, 1, 2])
    assert list(records.labels) == ["e", "b"]


def test_group_errors_say_what_is_wrong(rng):
    ds = loglik_dataset(rng)
    ll = LogLikelihood.from_dataset(ds, ["y"])
    with pytest.raises(KeyError, match="'household' is not a coordinate of log_likelihood"):
        Neighbours.from_groups(ll, "household")
    with pytest.raises(ValueError, match="coordinate 'year' spans non-record dims"):
        Neighbours.from_groups(ll, "year")
    with pytest.raises(ValueError, match="groups has 3 labels but the log-likelihood has 6"):
        Neighbours.from_groups(ll, [1, 2, 3])
    with pytest.raises(ValueError, match="missing labels"):
        Neighbours.from_groups(ll, [1, 1, 2, None, 3, 3])
    both = LogLikelihood.from_dataset(ds)
    with pytest.raises(KeyError, match="no entry for observed variable 'z'"):
        Neighbours.from_groups(both, {"y": [1, 1, 2, 2, 3, 3]})
    with pytest.raises(ValueError, match="groups for 'z' have 2 labels but it has 6 records"):
        Neighbours.from_groups(both, {"y": [1, 1, 2, 2, 3, 3], "z": [1, 2]})


# ------------------------------------------------- the recipe: a relation added in one place
@pytest.fixture
def shift_relation():
    """The docs' recipe (docs/concepts.md, "Adding a neighbour relation"), in one place.

    A record moved by ``by`` either way, the worst reported: bounded DP on a
    neighbourhood of values, e.g. an income misreported by a known margin.
    """
    from dataclasses import dataclass
    from typing import ClassVar

    import pymc_edp as edp

    @dataclass(frozen=True)
    class Shift(edp.Relation):
        by: float = 1.0

        name: ClassVar[str] = "shift"
        words: ClassVar[str] = "record shifted"
        replaces: ClassVar[bool] = True

        def candidate_values(self, name, y, integer):
            return np.stack([y - self.by, y + self.by])

        def fingerprint(self):
            return {**super().fingerprint(), "by": self.by}

    yield Shift
    RELATIONS.pop("shift")


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_relation_added_in_one_place_is_audited_end_to_end(shift_relation):
    """Reweighting, its name, words and fingerprint, and a verification refit of the
    neighbour model, with no other change: exact for a Normal mean (closed form)."""
    import pymc as pm

    import pymc_edp as edp
    from pymc_edp.conjugate import normal_normal_edp

    y = np.random.default_rng(41).normal(0.0, 1.0, 20)
    with pm.Model() as model:
        mu = pm.Normal("mu", 0.0, 10.0)
        pm.Normal("y", mu, 1.0, observed=y)
        idata = pm.sample(
            1000,
            tune=500,
            chains=2,
            random_seed=1,
            progressbar=False,
            compute_convergence_checks=False,
        )
        pm.compute_log_likelihood(idata, progressbar=False)
    shift = shift_relation(by=2.0)
    assert edp.Relation.coerce("shift") == shift_relation()
    res = edp.audit(
        idata,
        model,
        bins=10,
        neighbour=shift,
        method=edp.Auto(verify={"top": 1}),
        refit={"draws": 500, "tune": 300},
        random_seed=1,
        progressbar=False,
    )
    exact = normal_normal_edp(
        y, 1.0, 0.0, 10.0, 10, "replace", np.stack([y - 2.0, y + 2.0], axis=1), pointwise=True
    )
    # 2,000 draws: about 5% Monte-Carlo error at these epsilons (0.4 to 0.9)
    np.testing.assert_allclose(res.pointwise["epsilon"].values, exact, rtol=0.15)
    assert res.epsilon == pytest.approx(exact.max(), rel=0.1)
    assert res.neighbour == "shift" and "20 neighbours (record shifted)" in repr(res)
    assert set(res.pointwise["worst_replacement"].values) <= {0, 1}
    assert res.verification == "confirmed", res.verification_note
    assert shift.fingerprint() == {"neighbour": "shift", "groups": None, "by": 2.0}


def test_neighbour_words_are_the_relations():
    assert neighbour_words("remove") == "record removed"
    assert neighbour_words("replace") == "record replaced"
    assert neighbour_words("remove (groups)") == "individual's records removed"
    assert neighbour_words("swap") == "swap"  # a relation this process does not know


def test_a_relation_bound_to_its_candidates():
    import pymc_edp as edp

    rel = edp.Replace([0.0, 5.0])
    y = np.array([1.0, 2.0, 3.0])
    values = rel.candidate_values("y", y, integer=False)
    assert values.shape == (2, 3) and rel.n_candidates == 1 and rel.replacement(0) is None
    arrays = [[np.zeros((4, 3))], [np.ones((4, 3))]]
    bound = rel.with_candidates({"y": values}, arrays)
    assert bound == rel and bound.n_candidates == 2 and rel.n_candidates == 1  # a copy
    assert bound.replacement(1)[0] is arrays[1][0] and bound.reads_rows_once()
    np.testing.assert_array_equal(bound.values(1)["y"], [5.0, 5.0, 5.0])
    assert edp.Remove().values(0) is None and not edp.Remove().reads_rows_once()
