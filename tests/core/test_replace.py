"""Tests of pymc_edp.core.replace: the replacement data sets of ``neighbour="replace"``."""

import numpy as np
import pytest

from pymc_edp.core.replace import PerRecord, candidates, check_support


def test_binary_data_default_to_the_flipped_value():
    y = np.array([0, 1, 1, 0])
    out = candidates(None, "y", y)
    np.testing.assert_array_equal(out, [[1, 0, 0, 1]])
    # NaN (missing) entries do not stop 0/1 float data from being binary
    yf = np.array([0.0, np.nan, 1.0])
    np.testing.assert_array_equal(candidates(None, "y", yf), [[1.0, np.nan, 0.0]])


def test_non_binary_data_need_replacements():
    with pytest.raises(ValueError, match="needs replacement values for 'y': its data are not 0/1"):
        candidates(None, "y", np.array([0.0, 2.5]))


def test_a_list_is_candidates_tried_for_every_record():
    y = np.array([[1.0, 2.0], [3.0, 4.0]])
    out = candidates([0.0, 9.0], "y", y)
    assert out.shape == (2, 2, 2)
    np.testing.assert_array_equal(out[0], np.zeros((2, 2)))
    np.testing.assert_array_equal(out[1], np.full((2, 2), 9.0))
    out[0, 0, 0] = 5.0  # a writable copy, not a broadcast view
    assert out[1, 0, 0] == 9.0


def test_per_record_values_one_or_several_per_record():
    y = np.array([1.0, 2.0, 3.0])
    np.testing.assert_array_equal(candidates(PerRecord([4.0, 5.0, 6.0]), "y", y), [[4, 5, 6]])
    two = candidates(PerRecord([[4.0, 5.0, 6.0], [7.0, 8.0, 9.0]]), "y", y)
    np.testing.assert_array_equal(two, [[4, 5, 6], [7, 8, 9]])
    with pytest.raises(ValueError, match=r"have shape \(2,\); expected the data's shape \(3,\)"):
        candidates(PerRecord([4.0, 5.0]), "y", y)


def test_a_mapping_selects_the_variable():
    y = np.array([1.0, 2.0])
    out = candidates({"y": [0.5], "z": [7.0]}, "y", y)
    np.testing.assert_array_equal(out, [[0.5, 0.5]])
    with pytest.raises(KeyError, match="replacements has no entry for observed variable 'w'"):
        candidates({"y": [0.5]}, "w", y)


def test_malformed_replacements_are_refused():
    y = np.array([1.0, 2.0])
    with pytest.raises(ValueError, match="a plain list or 1-d array lists candidate values"):
        candidates([[1.0, 2.0], [3.0, 4.0]], "y", y)
    with pytest.raises(ValueError, match="replacements for 'y' are empty"):
        candidates([], "y", y)
    with pytest.raises(TypeError, match="replacements for 'y' must be numbers, got dtype <U1"):
        candidates(["a"], "y", y)
    with pytest.raises(ValueError, match="replacements for 'y' are not an array"):
        candidates([[1.0], [2.0, 3.0]], "y", y)


def test_integer_data_refuse_fractional_replacements():
    counts = np.array([3, 0, 5])
    np.testing.assert_array_equal(candidates([2.0], "n", counts), [[2, 2, 2]])
    with pytest.raises(ValueError, match=r"can only be integers .* \(e.g. 2.5\)"):
        candidates([1.0, 2.5], "n", counts)
    # whole-number floats under a continuous likelihood accept any real value...
    np.testing.assert_array_equal(candidates([2.5], "y", np.array([1.0, 2.0])), [[2.5, 2.5]])
    # ...unless the likelihood's support is integer
    with pytest.raises(ValueError, match="can only be integers"):
        candidates([2.5], "y", np.array([1.0, 2.0]), integer=True)


def test_check_support_names_the_first_impossible_value():
    cands = np.array([[1.0, 2.0, 3.0], [4.0, -1.0, 6.0]])
    alt = np.zeros((2, 5, 3))  # (candidate, draw, term)
    check_support(alt, cands, "y")  # finite somewhere: fine
    alt[1, :, 1] = -np.inf
    alt[1, :3, 2] = np.nan  # finite at some draws: still in the support
    with pytest.raises(ValueError, match=r"replacement value -1.0 for record 1 of 'y' is outside"):
        check_support(alt, cands, "y")
