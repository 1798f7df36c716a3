"""Tests of pymc_edp.query.density: density models and their held-out selection."""

import numpy as np
import pytest

import pymc_edp.query as edpq


def test_select_density_prefers_laplace_for_laplace_data(rng):
    x = rng.laplace(size=1500)
    model, scores = edpq.select_density(x, method="kde")
    assert model.kernel == "laplace"
    assert list(scores.columns) == [
        "method",
        "kernel",
        "adaptivity",
        "bandwidth",
        "pilot_bandwidth",
        "heldout_loglik",
    ]
    # held-out selection is monotone in quality: the winner is the first row
    assert scores["heldout_loglik"].iloc[0] == scores["heldout_loglik"].max()


def test_variable_bandwidths_widen_in_the_tails(rng):
    x = rng.standard_t(3, size=800)
    model, _ = edpq.select_density(x, kernels=("gaussian",), adaptivity=0.5)
    h = model.point_bandwidths(x)
    order = np.argsort(np.abs(x))
    assert h[order[-20:]].mean() > 2 * h[order[:20]].mean()
    attrs = model.to_attrs()
    assert edpq.DensityModel.from_attrs(attrs) == model


def test_density_model_pdf_and_logpdf_mv_agree(rng):
    # The 1-D pdf (batch axes first) and the multivariate log density of a one-column sample
    # are the same estimate.
    pts = rng.normal(size=(2, 50))
    x = np.linspace(-3, 3, 7)
    model = edpq.DensityModel(method="kde", kernel="laplace", bandwidth=0.4)
    pdf = model.pdf(pts, x)
    assert pdf.shape == (2, 7)
    for b in range(2):
        np.testing.assert_allclose(
            np.exp(model.logpdf_mv(pts[b][:, None], x[:, None])), pdf[b], rtol=1e-12
        )


def test_density_model_refuses_unknown_names():
    with pytest.raises(ValueError, match="method"):
        edpq.DensityModel(method="histogram")
    with pytest.raises(ValueError, match="kernel"):
        edpq.DensityModel(kernel="epanechnikov")
