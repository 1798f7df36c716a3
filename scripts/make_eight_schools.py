"""Write pymc_edp/datasets/eight_schools.npz from ArviZ 0.23's ``centered_eight`` example.

Run once with ArviZ 0.23 installed (the Python 3.11 stack):
``python scripts/make_eight_schools.py``. The file keeps the posterior draws, the pointwise
log-likelihood, the observed data and the known standard errors, as plain NumPy arrays (no
netCDF backend needed to read them), so that the examples and docs give the same numbers on
both stacks: arviz_base ships different draws of this data set than ArviZ 0.23.
"""

from pathlib import Path

import arviz as az
import numpy as np

out = Path(__file__).resolve().parents[1] / "pymc_edp" / "datasets" / "eight_schools.npz"
idata = az.load_arviz_data("centered_eight")
np.savez_compressed(
    out,
    school=idata.posterior["school"].values.astype(str),
    mu=idata.posterior["mu"].values,
    tau=idata.posterior["tau"].values,
    theta=idata.posterior["theta"].transpose("chain", "draw", "school").values,
    log_likelihood=idata.log_likelihood["obs"].transpose("chain", "draw", "school").values,
    obs=idata.observed_data["obs"].values,
    sigma=np.array([15.0, 10.0, 16.0, 11.0, 9.0, 11.0, 10.0, 18.0]),  # known standard errors
)
print(out, out.stat().st_size)
