"""Small real data sets shipped with pymc_edp, and the models the demo fits to them.

Each has a provenance note (``<name>.md``: source, licence, variables, why it is sensitive).
Files are read with :mod:`importlib.resources`, so they load from an installed wheel too.
"""

from __future__ import annotations

from importlib import resources
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

if TYPE_CHECKING:
    import pymc as pm

__all__ = [
    "DAYS_PER_YEAR",
    "dataset_path",
    "heart_transplant_model",
    "heart_transplant_provenance",
    "load_eight_schools",
    "load_heart_transplant",
]

DAYS_PER_YEAR = 365.25

_HEART_COLUMNS = ("patient", "survival", "censored", "age")


def dataset_path(filename: str):
    """A :class:`~importlib.resources.abc.Traversable` handle to a file shipped here.

    Use :func:`importlib.resources.as_file` for a real file-system path.

    Examples
    --------
    >>> csv = dataset_path("heart_transplant.csv")
    >>> csv.name, csv.is_file()
    ('heart_transplant.csv', True)
    >>> csv.read_text(encoding="utf-8").splitlines()[0]
    'patient,survival,censored,age'
    """
    return resources.files("pymc_edp.datasets").joinpath(filename)


def load_eight_schools():
    """Posterior draws of the centered eight-schools model, as the stack's own container.

    Rubin's (1981) eight schools: ``obs_j ~ N(theta_j, sigma_j)``, ``theta_j ~ N(mu, tau)``.
    The draws (4 chains x 500) are ArviZ 0.23's ``centered_eight``, shipped here because
    arviz_base has different draws: examples give the same numbers on both stacks.

    Returns
    -------
    xarray.DataTree or arviz.InferenceData
        A DataTree on ArviZ 1.x, an InferenceData on ArviZ 0.23, with groups ``posterior``
        (``mu``, ``tau``, ``theta``), ``log_likelihood`` (``obs``), ``observed_data``
        (``obs``) and ``constant_data`` (``sigma``), dimension ``school``.

    References
    ----------
    .. [1] Rubin, D. B. "Estimation in parallel randomized experiments." Journal of
       Educational Statistics 6(4), 1981.

    Examples
    --------
    >>> from pymc_edp.model.compat import get_group
    >>> dict(get_group(idata, "posterior").sizes)
    {'chain': 4, 'draw': 500, 'school': 8}
    >>> get_group(idata, "observed_data")["obs"].values.tolist()
    [28.0, 8.0, -3.0, 7.0, -1.0, 1.0, 18.0, 12.0]
    """
    import xarray as xr

    from pymc_edp.model.compat import make_container

    with dataset_path("eight_schools.npz").open("rb") as fh, np.load(fh) as npz:
        arrays = {k: npz[k] for k in npz.files}
    coords = {"school": arrays["school"].astype(str)}
    sample = ("chain", "draw")
    chains, draws = arrays["mu"].shape
    sample_coords = {"chain": np.arange(chains), "draw": np.arange(draws), **coords}
    attrs = {"inference_library": "pymc", "source": "ArviZ 0.23 centered_eight"}
    posterior = xr.Dataset(
        {
            "mu": (sample, arrays["mu"]),
            "theta": ((*sample, "school"), arrays["theta"]),
            "tau": (sample, arrays["tau"]),
        },
        coords=sample_coords,
        attrs=attrs,
    )
    log_likelihood = xr.Dataset(
        {"obs": ((*sample, "school"), arrays["log_likelihood"])}, coords=sample_coords
    )
    observed = xr.Dataset({"obs": ("school", arrays["obs"])}, coords=coords)
    constant = xr.Dataset({"sigma": ("school", arrays["sigma"])}, coords=coords)
    return make_container(
        {
            "posterior": posterior,
            "log_likelihood": log_likelihood,
            "observed_data": observed,
            "constant_data": constant,
        }
    )


def load_heart_transplant() -> pd.DataFrame:
    """The Stanford heart-transplant survival data (Miller 1976; 69 patients).

    Copied from ``statsmodels.datasets.heart``; :func:`heart_transplant_provenance` gives
    source, licence and changes.

    Returns
    -------
    pandas.DataFrame
        One row per patient: ``patient`` (1..69, the statsmodels row order), ``survival``
        (days from surgery to death, or to the end of follow-up when ``censored == 1``),
        ``censored`` (1 if alive at last follow-up; statsmodels' ``censors`` is the
        opposite) and ``age`` (years, at surgery).

    Examples
    --------
    >>> df = load_heart_transplant()
    >>> df.shape
    (69, 4)
    >>> int(df["censored"].sum())
    24
    """
    with dataset_path("heart_transplant.csv").open("r", encoding="utf-8") as fh:
        df = pd.read_csv(
            fh,
            dtype={"patient": np.int64, "survival": np.int64, "censored": np.int64},
        )
    df["age"] = df["age"].astype(np.float64)
    return df.loc[:, list(_HEART_COLUMNS)]


def heart_transplant_provenance() -> str:
    """The provenance note of the heart-transplant data, ``heart_transplant.md`` (Markdown).

    Examples
    --------
    >>> heart_transplant_provenance().splitlines()[0]
    '# Stanford heart-transplant survival data (69 patients)'
    """
    return dataset_path("heart_transplant.md").read_text(encoding="utf-8")


def heart_transplant_model(df: pd.DataFrame | None = None) -> pm.Model:
    """The demo's censored Weibull survival regression of the heart-transplant data.

    Survival time ``t_i`` in years, scale log-linear in standardised age::

        z_i          = (age_i - mean(age)) / sd(age)
        log lambda_i = intercept + beta_age * z_i
        t_i          ~ Weibull(alpha, lambda_i), right-censored at t_i if censored_i == 1

        intercept ~ Normal(0, 2)       # log scale (years); +-2 sd: 0.02 to 55 years
        beta_age  ~ Normal(0, 1)       # a 1-sd change in age multiplies the scale by e^{+-1}
        alpha     ~ LogNormal(0, 0.75) # shape: covers decreasing and increasing hazards

    Censoring uses :class:`pymc.Censored`. The observed ``survival`` has dimension
    ``patient`` (the patient ids), so per-record log-likelihoods and audits carry the ids.

    Parameters
    ----------
    df : pandas.DataFrame, optional
        Data in the layout of :func:`load_heart_transplant` (default: the shipped data).

    Examples
    --------
    >>> model = heart_transplant_model()
    >>> [rv.name for rv in model.free_RVs], [rv.name for rv in model.observed_RVs]
    (['intercept', 'beta_age', 'alpha'], ['survival'])
    >>> len(model.coords["patient"])
    69
    >>> len(heart_transplant_model(load_heart_transplant().head(10)).coords["patient"])
    10
    """
    import pymc as pm

    if df is None:
        df = load_heart_transplant()
    missing = set(_HEART_COLUMNS) - set(df.columns)
    if missing:
        raise ValueError(f"df lacks column(s) {sorted(missing)}; expected {list(_HEART_COLUMNS)}")
    if df["patient"].duplicated().any():
        raise ValueError("df['patient'] must be unique: it labels the records")

    t_years = df["survival"].to_numpy(dtype=np.float64) / DAYS_PER_YEAR
    if np.any(t_years <= 0):
        raise ValueError("survival times must be positive")
    censored = df["censored"].to_numpy().astype(bool)
    age = df["age"].to_numpy(dtype=np.float64)
    age_z = (age - age.mean()) / age.std()
    upper = np.where(censored, t_years, np.inf)

    coords = {"patient": df["patient"].to_numpy()}
    with pm.Model(coords=coords) as model:
        intercept = pm.Normal("intercept", mu=0.0, sigma=2.0)
        beta_age = pm.Normal("beta_age", mu=0.0, sigma=1.0)
        alpha = pm.LogNormal("alpha", mu=0.0, sigma=0.75)
        scale = pm.math.exp(intercept + beta_age * age_z)
        pm.Censored(
            "survival",
            pm.Weibull.dist(alpha=alpha, beta=scale),
            lower=None,
            upper=upper,
            observed=t_years,
            dims="patient",
        )
    return model
