"""In-order matrix products: equal to ``@`` to rounding, the same bits in any call shape."""

import numpy as np
import pytest

from pymc_edp.base.products import matmul2, matmul3, matmul_in_order


@pytest.mark.parametrize(
    ("sa", "sb"),
    [((4, 3), (3, 2)), ((5, 4, 3), (3, 2)), ((4, 3), (7, 3, 1)), ((3,), (3, 2)), ((4, 3), (3,))],
)
def test_matches_matmul(rng, sa, sb):
    a, b = rng.normal(size=sa), rng.normal(size=sb)
    got = matmul_in_order(a, b)
    assert got.shape == (a @ b).shape
    np.testing.assert_allclose(got, a @ b, rtol=1e-13, atol=1e-13)


def test_every_element_is_the_same_bits_in_any_chunk(rng):
    # BLAS gemm changes the last bits with the shape of the call; summing in order does not
    x = rng.normal(size=(1500, 5))
    beta = rng.normal(size=(300, 5, 1))
    full = matmul3(x[None], beta)
    for size in (1, 7, 64, 499):
        for lo in range(0, 1500, size):
            np.testing.assert_array_equal(
                matmul3(x[None, lo : lo + size], beta), full[:, lo : lo + size]
            )
    idx = rng.permutation(1500)[:100]
    np.testing.assert_array_equal(matmul3(x[None, idx], beta), full[:, idx])


def test_two_dimensional_and_non_contiguous(rng):
    a = rng.normal(size=(6, 4))
    b = rng.normal(size=(2, 4)).T  # a transposed view
    np.testing.assert_allclose(matmul2(a, b), a @ b, rtol=1e-13)
