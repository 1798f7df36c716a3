"""The tail of a raw refit's bin z under the null (tests/auditing/test_verification.py).

Full-data draws (4,000) and a refit's (2,000) of the same standard normal, 10 quantile
bins cut from the full-data draws; each bin's ``z = log(B P'(b)) / se`` with the
delta-method error of :func:`pymc_edp.base.mcse.refit_log_ratio_se`. Printed: how often
``|z|`` exceeds 2, 3, 3.5 and 4 (and each side) against a normal's. Run from the project
root: ``python tests/reference/raw_refit_z_tail.py`` (about 2 minutes); with seed 1 it
gave P(|z| > 4) = 1.3e-4 (all on the upper side) against 6.3e-5, sd of z 0.97.
"""

import numpy as np
from scipy import stats

from pymc_edp.base import binning
from pymc_edp.base.mcse import refit_log_ratio_se


def main(n: int = 3000, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    z = []
    for _ in range(n):
        full = rng.normal(size=(1, 4000))
        bins = binning.quantile_bins(full, 10)
        order = np.argsort(full, axis=1, kind="stable")
        refit = rng.normal(size=(1, 2000))
        idx = binning.assign_bins(refit, bins)[0]
        log_ratio = np.log(np.bincount(idx, minlength=10) / 2000 / 0.1)
        se = [refit_log_ratio_se(refit, bins, 0, j, order=order, draws=full)[1] for j in range(10)]
        z.append(log_ratio / np.array(se))
    z = np.array(z)
    for t in (2, 3, 3.5, 4):
        print(
            f"|z| > {t}: {np.mean(np.abs(z) > t):.2e} (upper {np.mean(z > t):.2e}, lower "
            f"{np.mean(z < -t):.2e}); normal {2 * stats.norm.sf(t):.2e}"
        )
    print(f"sd of z {z.std():.3f}")


if __name__ == "__main__":
    main()
