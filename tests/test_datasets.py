import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest
import xarray as xr
from scipy import stats

from pymc_edp.datasets import (
    DAYS_PER_YEAR,
    dataset_path,
    heart_transplant_model,
    heart_transplant_provenance,
    load_heart_transplant,
)
from pymc_edp.model.compat import from_dict

REPO = Path(__file__).resolve().parents[1]


def test_heart_transplant_layout():
    df = load_heart_transplant()
    assert list(df.columns) == ["patient", "survival", "censored", "age"]
    assert df.shape == (69, 4)
    assert df["patient"].tolist() == list(range(1, 70))
    assert df["patient"].dtype == np.int64
    assert df["survival"].dtype == np.int64
    assert df["age"].dtype == np.float64
    assert set(df["censored"].unique()) == {0, 1}
    assert int(df["censored"].sum()) == 24
    assert df["survival"].min() == 1 and df["survival"].max() == 1775
    assert df["age"].min() == pytest.approx(19.7) and df["age"].max() == pytest.approx(64.5)
    assert not df.isna().any().any()


def test_heart_transplant_matches_statsmodels_copy():
    heart = pytest.importorskip("statsmodels.datasets.heart")
    ref = heart.load_pandas().data
    df = load_heart_transplant()
    np.testing.assert_array_equal(df["survival"].to_numpy(), ref["survival"].to_numpy())
    # statsmodels' ``censors`` is 1 for an observed death; ours is the censoring indicator
    np.testing.assert_array_equal(df["censored"].to_numpy(), 1 - ref["censors"].to_numpy())
    np.testing.assert_allclose(df["age"].to_numpy(), ref["age"].to_numpy())


def test_provenance_note():
    assert dataset_path("heart_transplant.csv").is_file()
    text = heart_transplant_provenance()
    for needle in ("Miller", "Biometrika", "statsmodels", "Licence", "sensitive", "censored"):
        assert needle in text


def _loglik_at(model, point):
    import pymc as pm

    posterior = {k: np.full((1, 1), v) for k, v in point.items()}
    idata = from_dict({"posterior": posterior})
    ll = pm.compute_log_likelihood(
        idata, model=model, extend_inferencedata=False, progressbar=False
    )
    return ll["survival"]


def test_heart_transplant_model_structure_and_likelihood():
    df = load_heart_transplant()
    model = heart_transplant_model(df)
    assert sorted(rv.name for rv in model.free_RVs) == ["alpha", "beta_age", "intercept"]
    assert [rv.name for rv in model.observed_RVs] == ["survival"]
    assert model.named_vars_to_dims["survival"] == ("patient",)
    np.testing.assert_array_equal(model.coords["patient"], df["patient"].to_numpy())

    point = {"intercept": 0.4, "beta_age": -0.7, "alpha": 0.6}
    ll = _loglik_at(model, point)
    assert isinstance(ll, xr.DataArray)
    assert ll.sizes["patient"] == 69
    np.testing.assert_array_equal(ll["patient"].values, df["patient"].to_numpy())

    t = df["survival"].to_numpy() / DAYS_PER_YEAR
    age = df["age"].to_numpy()
    z = (age - age.mean()) / age.std()
    scale = np.exp(point["intercept"] + point["beta_age"] * z)
    dist = stats.weibull_min(c=point["alpha"], scale=scale)
    expected = np.where(df["censored"].to_numpy() == 1, dist.logsf(t), dist.logpdf(t))
    np.testing.assert_allclose(ll.values.ravel(), expected, rtol=1e-10)


def test_heart_transplant_model_validates_input():
    df = load_heart_transplant()
    with pytest.raises(ValueError, match="lacks column"):
        heart_transplant_model(df.drop(columns="age"))
    dup = df.copy()
    dup.loc[1, "patient"] = 1
    with pytest.raises(ValueError, match="unique"):
        heart_transplant_model(dup)
    zero = df.copy()
    zero.loc[0, "survival"] = 0
    with pytest.raises(ValueError, match="positive"):
        heart_transplant_model(zero)


@pytest.mark.slow
def test_data_files_ship_in_the_wheel_and_load_from_it(tmp_path):
    """Build a wheel, unpack it as an install would, and load the data from there.

    The build runs in pip's isolated build environment (it installs the build-system
    requirements from the package index); without one the test is skipped.
    """
    # build from a copy so that the source tree gets no build/ folder
    src = tmp_path / "src"
    shutil.copytree(
        REPO / "pymc_edp", src / "pymc_edp", ignore=shutil.ignore_patterns("__pycache__")
    )
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(REPO / name, src / name)
    build = subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--no-deps",
            "-q",
            "-w",
            str(tmp_path),
            str(src),
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )
    if build.returncode != 0:
        pytest.skip(f"cannot build a wheel here: {build.stderr[-500:]}")
    (wheel,) = tmp_path.glob("pymc_edp-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "pymc_edp/datasets/heart_transplant.csv" in names
    assert "pymc_edp/datasets/heart_transplant.md" in names

    code = (
        "import pymc_edp.datasets as d, sys; "
        "assert d.__file__.startswith(sys.argv[1]), d.__file__; "
        "df = d.load_heart_transplant(); "
        "assert df.shape == (69, 4); "
        "assert 'Miller' in d.heart_transplant_provenance(); "
        "print('ok')"
    )
    # an installed wheel is its unpacked zip; put only that (not the source tree) on the path
    site = tmp_path / "site"
    zipfile.ZipFile(wheel).extractall(site)
    env = dict(os.environ, PYTHONPATH=str(site))
    run = subprocess.run(
        [sys.executable, "-c", code, str(site)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert run.returncode == 0, run.stderr[-2000:]
    assert run.stdout.strip().endswith("ok")
