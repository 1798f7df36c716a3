"""Tests of pymc_edp.base.common: sizes, chunks, seeds and the warning class."""

import warnings

import numpy as np
import pytest

from pymc_edp.base.common import (
    CHUNK_BYTES,
    EDPWarning,
    chunk_slices,
    parse_bytes,
    resolve_seed,
    rows_per_chunk,
)


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (1024, 1024),
        (1.5e3, 1500),
        ("512MiB", 512 * 2**20),
        ("2 GB", 2 * 10**9),
        (" 1.5kib ", 1536),
        ("10kB", 10_000),
        ("3TiB", 3 * 2**40),
        ("7", 7),
        ("64b", 64),
    ],
)
def test_parse_bytes(value, expected):
    assert parse_bytes(value) == expected


@pytest.mark.parametrize("value", ["lots", "12 parsecs", "MiB", ""])
def test_parse_bytes_refuses_what_is_not_a_size(value):
    with pytest.raises(ValueError, match=r"is not a size: give bytes or a string like '512MiB'"):
        parse_bytes(value, "chunk_memory")


@pytest.mark.parametrize("value", [True, None, [512]])
def test_parse_bytes_refuses_other_types(value):
    with pytest.raises(TypeError, match="memory must be a number of bytes"):
        parse_bytes(value)


@pytest.mark.parametrize("value", [0, -5, "0MiB"])
def test_parse_bytes_refuses_non_positive_sizes(value):
    with pytest.raises(ValueError, match="budget must be positive"):
        parse_bytes(value, "budget")


def test_rows_per_chunk_fills_the_chunk_budget():
    # CHUNK_BYTES is 32 MiB: 4,096 draws of float64 are 32 KiB a row, so 1,024 rows
    assert CHUNK_BYTES == 32 * 2**20
    assert rows_per_chunk(4096) == 1024
    assert rows_per_chunk(4096, factor=4) == 256
    assert rows_per_chunk(10**9) == 1  # never zero rows
    assert rows_per_chunk(0) == CHUNK_BYTES // 8  # a degenerate size counts as one draw


def test_chunk_slices_cover_the_range_once():
    slices = list(chunk_slices(2500, 4096))
    assert slices == [slice(0, 1024), slice(1024, 2048), slice(2048, 2500)]
    assert list(chunk_slices(0, 4096)) == []
    covered = np.concatenate([np.arange(7)[s] for s in chunk_slices(7, 2**22)])
    np.testing.assert_array_equal(covered, np.arange(7))
    assert len(list(chunk_slices(7, 2**22))) == 7  # one row of 32 MiB per chunk


def test_resolve_seed_integers_and_generators():
    assert resolve_seed(7) == 7
    assert resolve_seed(np.int64(11)) == 11
    expected = int(np.random.default_rng(3).integers(2**31 - 1))
    assert resolve_seed(np.random.default_rng(3)) == expected
    expected = int(np.random.RandomState(3).randint(2**31 - 1))
    assert resolve_seed(np.random.RandomState(3)) == expected
    fresh = {resolve_seed(None) for _ in range(5)}
    assert all(isinstance(s, int) and 0 <= s < 2**32 for s in fresh)
    assert len(fresh) > 1


@pytest.mark.parametrize("seed", [1.5, "3", True])
def test_resolve_seed_refuses_other_types(seed):
    with pytest.raises(TypeError, match="random_seed must be None, an integer or a numpy"):
        resolve_seed(seed)


def test_resolve_seed_refuses_negative_seeds():
    with pytest.raises(ValueError, match="random_seed must be >= 0, got -1"):
        resolve_seed(-1)


def test_edp_warning_is_a_user_warning_that_filters_apply_to():
    assert issubclass(EDPWarning, UserWarning)
    with warnings.catch_warnings():
        warnings.simplefilter("error", EDPWarning)
        with pytest.raises(EDPWarning, match="k-hat"):
            warnings.warn("k-hat above the threshold", EDPWarning, stacklevel=1)


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "1.2.3MB", "nanMB", "1e999GB"])
def test_parse_bytes_refuses_non_finite_and_malformed_sizes(value):
    # these used to escape as float conversion errors ('cannot convert float NaN to integer')
    with pytest.raises(ValueError, match=r"memory=.* is not a size: give bytes"):
        parse_bytes(value)


def test_parse_bytes_says_a_fraction_of_a_byte_is_too_small():
    with pytest.raises(ValueError, match=r"at least one byte\), got 0.5"):
        parse_bytes(0.5)
