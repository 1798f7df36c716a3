"""Tests of pymc_edp.query.samples: Algorithm 1, the query with and without everybody."""

import math

import numpy as np
import pandas as pd
import pytest
import xarray as xr

import pymc_edp.query as edpq


def test_query_samples_single_frame_and_vector_query(rng, make_databases):
    dbs = make_databases(rng, n_db=5, n_ind=4)
    frame = pd.concat([d.assign(day=f"d{j}") for j, d in enumerate(dbs)], ignore_index=True)
    frame["y"] = 1.0
    ds = edpq.query_samples(
        frame, edpq.sum_query(["x", "y"]), id_col="id", database_col="day", progressbar=False
    )
    assert list(ds["database"].to_numpy()) == ["d0", "d1", "d2", "d3", "d4"]
    assert list(ds["component"].to_numpy()) == ["x", "y"]
    np.testing.assert_allclose(ds["value_without"].sel(component="y").to_numpy(), 3.0)
    # generic vector query returning a Series: the same numbers
    gen = edpq.query_samples(
        frame,
        lambda df: df[["x", "y"]].sum(),
        id_col="id",
        database_col="day",
        progressbar=False,
    )
    np.testing.assert_allclose(gen["value_without"], ds["value_without"])


def _noisy_sum(df, rng):
    return df["x"].sum() + rng.normal()


@pytest.mark.slow
@pytest.mark.both_stacks
def test_randomised_query_reproducible_and_executor_independent(rng, make_databases):
    dbs = make_databases(rng, n_db=6, n_ind=5)
    kw = dict(id_col="id", n_draws=3, random_seed=42, progressbar=False)
    serial = edpq.query_samples(dbs, _noisy_sum, **kw)
    pooled = edpq.query_samples(dbs, _noisy_sum, executor=2, chunk_size=2, **kw)
    xr.testing.assert_identical(serial, pooled)
    assert serial.sizes["draw"] == 3
    # common random numbers: with and without i share the noise, so the difference is
    # exactly i's contribution
    diff = serial["value"] - serial["value_without"].sel(individual=1)
    contrib = np.array([d.loc[d["id"] == 1, "x"].sum() for d in dbs])
    np.testing.assert_allclose(diff.to_numpy(), np.repeat(contrib[:, None], 3, axis=1))
    indep = edpq.query_samples(dbs, _noisy_sum, common_random_numbers=False, **kw)
    assert not np.allclose(indep["value_without"], serial["value_without"])
    # independent streams do not depend on how individuals are chunked into tasks either
    indep_pool = edpq.query_samples(
        dbs, _noisy_sum, common_random_numbers=False, executor=2, chunk_size=2, **kw
    )
    xr.testing.assert_identical(indep, indep_pool)
    with pytest.raises(ValueError, match="randomised"):
        edpq.query_samples(dbs, edpq.sum_query("x"), id_col="id", n_draws=2)


def test_query_samples_on_dask(rng, make_databases):
    distributed = pytest.importorskip("distributed")
    dbs = make_databases(rng, n_db=4, n_ind=5)
    with (
        distributed.LocalCluster(
            n_workers=1, processes=False, threads_per_worker=1, dashboard_address=None
        ) as cluster,
        distributed.Client(cluster) as client,
    ):
        ds = edpq.query_samples(
            dbs, lambda df: df["x"].max(), id_col="id", executor=client, progressbar=False
        )
    ref = edpq.query_samples(dbs, lambda df: df["x"].max(), id_col="id", progressbar=False)
    xr.testing.assert_identical(ds, ref)


def test_query_errors(rng, make_databases):
    dbs = make_databases(rng, n_db=3, n_ind=2, heavy=0)
    with pytest.raises(ValueError, match="non-finite"):
        edpq.query_samples(
            dbs,
            lambda df: df["x"].sum() if len(df) > 1 else math.nan,
            id_col="id",
            progressbar=False,
        )
    with pytest.raises(ValueError, match="database_col"):
        edpq.query_samples(dbs[0], edpq.sum_query("x"), id_col="id")
    with pytest.raises(KeyError):
        edpq.query_samples(dbs, edpq.sum_query("x"), id_col="nope")


def _with_empty(make_databases, rng, n_db=24, n_ind=5, empty_at=7):
    """Databases keyed ``d00..``, database ``empty_at`` empty (right columns, no rows)."""
    dbs = {f"d{j:02d}": d for j, d in enumerate(make_databases(rng, n_db=n_db, n_ind=n_ind))}
    key = f"d{empty_at:02d}"
    dbs[key] = dbs[key].iloc[:0]
    return dbs, key


def test_query_edp_with_an_empty_database(rng, make_databases):
    """Regression: an empty database crashed the vectorised leave-one-out (reshape error).

    Nobody is in an empty database, so with and without every individual it gives the
    query on an empty frame (0 for a sum). Algorithm 2 pools all databases into both
    samples (a database without ``i`` contributes ``f(X^j)`` to both), so that 0 enters the
    densities: the reference is the profile of the non-empty databases' samples with a
    database of value 0 everywhere inserted at its place -- not the run without it.
    """
    dbs, key = _with_empty(make_databases, rng)
    kw = dict(
        profile=dict(
            epsilons=[0.0, 0.5, 1.0, 2.0, 4.0, 8.0],
            targets=[0.05],
            options=dict(kernels=("gaussian",)),
        ),
        random_seed=0,
        progressbar=False,
    )
    res = edpq.query_edp(dbs, edpq.sum_query("x"), id_col="id", **kw)
    for name in ("delta", "delta_star", "delta_i", "epsilon_delta"):
        assert np.all(np.isfinite(res[name].to_numpy())), name
    assert list(res["individual"].to_numpy()) == [0, 1, 2, 3, 4]
    assert float(res["value"].sel(database=key, draw=0)) == 0.0
    np.testing.assert_array_equal(res["value_without"].sel(database=key, draw=0), 0.0)
    assert not res["present"].sel(database=key).any()

    others = {k: d for k, d in dbs.items() if k != key}
    part = edpq.query_samples(others, edpq.sum_query("x"), id_col="id", progressbar=False)
    empty = xr.Dataset(
        {
            "value": (("database", "draw"), np.zeros((1, 1))),
            "value_without": (("individual", "database", "draw"), np.zeros((5, 1, 1))),
            "present": (("individual", "database"), np.zeros((5, 1), dtype=bool)),
        },
        coords={"database": np.array([key], dtype=object), "individual": part["individual"]},
    )
    ref_samples = xr.concat([part, empty], dim="database").sel(database=list(dbs))
    ref = edpq.privacy_profile(ref_samples, random_seed=0, progressbar=False, **kw["profile"])
    for name in ("delta", "delta_star", "delta_i", "epsilon_delta", "epsilon_delta_star"):
        np.testing.assert_allclose(res[name], ref[name], rtol=1e-12, err_msg=name)
    # the empty database does count (it is one more draw of the query): the profile differs
    # from the one that leaves it out
    dropped = edpq.query_edp(others, edpq.sum_query("x"), id_col="id", **kw)
    assert not np.allclose(res["delta_i"], dropped["delta_i"])


def test_query_samples_empty_database_all_paths(rng, make_databases):
    dbs, key = _with_empty(make_databases, rng, n_db=6, n_ind=4, empty_at=2)
    # a header-only frame (object columns) is an empty database too, and keeps ids numeric
    dbs["d04"] = pd.DataFrame(columns=["id", "x"])
    dbs["d05"] = dbs["d05"][dbs["d05"]["id"] != 0]  # individual 0 absent, others present
    vec = edpq.query_samples(dbs, edpq.sum_query("x"), id_col="id", progressbar=False)
    gen = edpq.query_samples(dbs, lambda df: df["x"].sum(), id_col="id", progressbar=False)
    xr.testing.assert_allclose(vec, gen)
    assert vec["individual"].dtype.kind == "i"
    np.testing.assert_array_equal(vec["value"].sel(database=[key, "d04"]), 0.0)
    # vector queries, and an audited subset with databases holding none of it
    vec2 = edpq.query_samples(
        dbs, edpq.sum_query(["x", "x"]), id_col="id", individuals=[0], progressbar=False
    )
    gen2 = edpq.query_samples(
        dbs, lambda df: df[["x", "x"]].sum(), id_col="id", individuals=[0], progressbar=False
    )
    np.testing.assert_allclose(vec2["value_without"], gen2["value_without"])
    np.testing.assert_allclose(
        vec2["value_without"].isel(component=0).squeeze(["individual", "draw"]),
        vec["value_without"].sel(individual=0).squeeze("draw"),
    )


def test_query_empty_database_errors(rng, make_databases):
    dbs, _ = _with_empty(make_databases, rng, n_db=4, n_ind=4, empty_at=1)
    # every database empty: nothing to audit
    with pytest.raises(ValueError, match=r"all 4 databases are empty.*'d00'.*'d03'"):
        edpq.query_edp(
            {k: d.iloc[:0] for k, d in dbs.items()},
            edpq.sum_query("x"),
            id_col="id",
            progressbar=False,
        )
    # a query that fails on an empty frame: refused, naming the database
    with pytest.raises(ValueError, match=r"database 'd01' \(position 1\) is empty") as info:
        edpq.query_edp(dbs, lambda df: df["x"].to_numpy().max(), id_col="id", progressbar=False)
    assert "zero-size array" in str(info.value)
    lst = list(dbs.values())
    with pytest.raises(ValueError, match=r"database 1 is empty.*cannot be evaluated"):
        edpq.query_samples(lst, lambda df: df["x"].to_numpy().max(), id_col="id")
    # a query that is NaN on an empty frame (the mean of nothing): same, names the database
    with pytest.raises(ValueError, match=r"non-finite value on database 'd01'.*is empty"):
        edpq.query_edp(dbs, edpq.mean_query("x"), id_col="id", progressbar=False)


def test_query_missing_ids_refused(rng, make_databases):
    dbs = make_databases(rng, n_db=4, n_ind=5)
    dbs[1] = dbs[1].astype({"id": float})
    dbs[1].loc[[0, 3], "id"] = np.nan
    dbs[3] = dbs[3].astype({"id": object})
    dbs[3].loc[2, "id"] = None
    pattern = (
        r"missing individual ids in id column 'id': 3 rows .*database 1: 2 rows; "
        r"database 3: 1 row\).*every row needs an individual id"
    )
    for query in (edpq.sum_query("x"), lambda df: df["x"].sum()):
        with pytest.raises(ValueError, match=pattern):
            edpq.query_edp(dbs, query, id_col="id", progressbar=False)
    frame = pd.concat([d.assign(day=f"d{j}") for j, d in enumerate(dbs[:2])])
    with pytest.raises(ValueError, match=r"'id'.*database 'd1' \(position 1\): 2 rows"):
        edpq.query_samples(frame, edpq.sum_query("x"), id_col="id", database_col="day")


class _CountingSum:
    """``sum(x)`` that counts its evaluations (an input error must come before any)."""

    def __init__(self):
        self.calls = 0

    def __call__(self, df):
        self.calls += 1
        return float(df["x"].sum())


def test_requested_individuals_in_no_database_refused(rng, make_databases):
    dbs = make_databases(rng, n_db=6, n_ind=10)
    query = _CountingSum()
    # String ids for integer ids used to give delta = 0 ("perfectly private").
    pattern = (
        r"2 of the 2 requested individuals are in none of the databases: \['3', '7'\].*"
        r"delta 0.*numbers of type int64, e\.g\. \[0, 1, 2, 3, 4\]; "
        r"did you mean individuals=\[3, 7\]\?"
    )
    with pytest.raises(ValueError, match=pattern):
        edpq.query_edp(dbs, query, id_col="id", individuals=["3", "7"], progressbar=False)
    # Only the absent one is named; without a conversion that fixes it, no suggestion.
    with pytest.raises(ValueError, match=r"1 of the 2 .*: \[99\].*leave individuals=None"):
        edpq.query_samples(dbs, query, id_col="id", individuals=[3, 99], progressbar=False)
    # The other way round: integers for string ids.
    str_dbs = [d.assign(id=d["id"].map(str)) for d in dbs]
    with pytest.raises(ValueError, match=r"strings of type str.*individuals=\['3', '7'\]"):
        edpq.query_samples(str_dbs, query, id_col="id", individuals=[3, 7], progressbar=False)
    with pytest.raises(ValueError, match="individuals is empty"):
        edpq.query_samples(dbs, query, id_col="id", individuals=[], progressbar=False)
    with pytest.raises(TypeError, match=r"single string '37'; write individuals=\['37'\]"):
        edpq.query_samples(str_dbs, query, id_col="id", individuals="37", progressbar=False)
    assert query.calls == 0  # refused before evaluating the query
    # Individuals present somewhere (even in one database only) are still accepted.
    dbs[2] = pd.concat([dbs[2], pd.DataFrame({"id": [42], "x": [1.0]})], ignore_index=True)
    samples = edpq.query_samples(dbs, query, id_col="id", individuals=[3, 42], progressbar=False)
    assert samples["present"].sel(individual=42).to_numpy().tolist() == [
        False,
        False,
        True,
        False,
        False,
        False,
    ]


def test_mixed_id_types_refused(rng, make_databases):
    dbs = make_databases(rng, n_db=6, n_ind=4)
    query = _CountingSum()
    # Integer ids in some databases and their string spelling in others: 4 people, not 8.
    mixed = [d.assign(id=d["id"].map(str)) if j % 2 else d for j, d in enumerate(dbs)]
    pattern = (
        r"ids in id column 'id' mix types: numbers \(e\.g\. 0\) in databases 0, 2, 4; "
        r"strings \(e\.g\. '0'\) in databases 1, 3, 5\..*counted as two different people.*"
        r"one id type"
    )
    with pytest.raises(ValueError, match=pattern):
        edpq.query_edp(mixed, query, id_col="id", progressbar=False)
    # Mixed within one database (an object column holding 3 and "3"), labelled databases.
    labelled = {f"d{j}": d for j, d in enumerate(dbs)}
    labelled["d4"] = labelled["d4"].astype({"id": object})
    labelled["d4"].loc[0, "id"] = "0"
    pattern = (
        r"numbers \(e\.g\. 0\) in databases 'd0' \(position 0\), .* and 2 more; strings "
        r"\(e\.g\. '0'\) in database 'd4' \(position 4\); database 'd4' \(position 4\) "
        r"mixes them within itself"
    )
    with pytest.raises(ValueError, match=pattern):
        edpq.query_samples(labelled, query, id_col="id", progressbar=False)
    assert query.calls == 0
    # Integers and floats are one type: 3 and 3.0 are the same person.
    floats = [d.astype({"id": float}) if j % 2 else d for j, d in enumerate(dbs)]
    samples = edpq.query_samples(floats, query, id_col="id", progressbar=False)
    assert samples.sizes["individual"] == 4
    assert bool(samples["present"].all())


@pytest.mark.parametrize(
    ("n_draws", "error", "match"),
    [
        (0, ValueError, r"n_draws must be an integer >= 1 .*got 0; use n_draws=1"),
        (-2, ValueError, r"n_draws must be an integer >= 1 .*got -2"),
        (1.5, ValueError, r"n_draws must be an integer >= 1 .*got 1\.5"),
        (math.nan, ValueError, r"n_draws must be an integer >= 1 .*got nan"),
        ("2", TypeError, r"n_draws must be an integer >= 1 .*got str '2'"),
        (None, TypeError, r"got NoneType None"),
        (True, TypeError, r"got bool True"),
    ],
)
def test_n_draws_validated_up_front(rng, make_databases, n_draws, error, match):
    dbs = make_databases(rng, n_db=4, n_ind=4)
    calls = []

    def query(df, rng):
        calls.append(1)
        return float(df["x"].sum() + rng.normal())

    with pytest.raises(error, match=match):
        edpq.query_edp(dbs, query, id_col="id", n_draws=n_draws, progressbar=False)
    assert not calls


def test_integral_float_n_draws_accepted(rng, make_databases):
    dbs = make_databases(rng, n_db=4, n_ind=4)
    samples = edpq.query_samples(
        dbs,
        lambda df, rng: float(df["x"].sum() + rng.normal()),
        id_col="id",
        n_draws=2.0,
        random_seed=1,
        progressbar=False,
    )
    assert samples.sizes["draw"] == 2 and samples.attrs["n_draws"] == 2
