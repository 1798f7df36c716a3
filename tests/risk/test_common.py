"""Tests of pymc_edp.risk._common."""

import numpy as np

from pymc_edp.risk._common import as_float_or_array


def test_zero_dimensional_results_become_python_floats():
    out = as_float_or_array(np.float64(0.25))
    assert type(out) is float and out == 0.25
    out = as_float_or_array(np.array(3))
    assert type(out) is float and out == 3.0


def test_arrays_are_returned_unchanged():
    a = np.array([0.5, 1.5])
    assert as_float_or_array(a) is a
    one = np.array([2.0])  # one element but one dimension: still an array
    assert as_float_or_array(one) is one
