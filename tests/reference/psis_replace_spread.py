"""Monte-Carlo spread of the reweighted B-EDP in Charest & Han's Table 2 setting (x = 1).

Justifies the draw count and tolerance of ``test_audit.py::test_bernoulli_replace_table2``.
Beta(0.5, 0.5) prior, n = 5, x = 1, neighbour "replace": the 1 -> 0 flip has weights
(1 - p) / p, whose tail is heavy (k-hat ~ 0.65), so the estimate converges slowly. With
i.i.d. draws from the exact posterior Beta(1.5, 4.5), 40 seeds, relative error to Table 2
(its entries are rounded to 0.01, i.e. up to 0.2% on their own):

    S       B   mean     sd      max|err|
    10000   5   -0.0152  0.0219  0.0526
    10000   10  -0.0086  0.0165  0.0421
    10000   20  -0.0035  0.0134  0.0440
    40000   5   -0.0100  0.0112  0.0314
    40000   10  -0.0076  0.0077  0.0190
    40000   20  -0.0037  0.0057  0.0146

So the test uses 4 x 10,000 draws, where 5% is about four standard deviations.
Run: python tests/reference/psis_replace_spread.py
"""

import numpy as np

from pymc_edp.base import binning
from pymc_edp.base.psis import psislw

TABLE2_X1 = {5: 2.16, 10: 2.49, 20: 2.97}


def main() -> None:
    for n_samples in (10_000, 40_000):
        errs = {b: [] for b in TABLE2_X1}
        for seed in range(40):
            rng = np.random.default_rng(seed)
            p = rng.beta(1.5, 4.5, size=n_samples)
            # flip the one 1 -> 0, or one of the 0s -> 1
            lw = np.stack([np.log1p(-p) - np.log(p), np.log(p) - np.log1p(-p)])
            smoothed, _ = psislw(lw, 1.0)
            for b in TABLE2_X1:
                bins = binning.quantile_bins(p[None], b)
                eps = binning.epsilon_estimates(smoothed, bins, 0.01).eps
                errs[b].append(eps.max() / TABLE2_X1[b] - 1)
        for b in TABLE2_X1:
            a = np.asarray(errs[b])
            print(
                f"{n_samples:6d} {b:3d}  mean {a.mean():+.4f}  sd {a.std():.4f}  "
                f"max|err| {np.abs(a).max():.4f}"
            )


if __name__ == "__main__":
    main()
