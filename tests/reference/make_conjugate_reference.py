"""High-precision reference values for tests/test_conjugate.py.

Independent of pymc_edp and SciPy: posterior parameters from the textbook formulas, bin
edges by root-finding / inverse error function and bin probabilities by numerical
quadrature (tanh-sinh) of the posterior densities, all in mpmath at 40 significant digits.

Run:  python tests/reference/make_conjugate_reference.py
and paste the printed values into tests/test_conjugate.py (they are quoted there).
"""

import itertools

import mpmath as mp

mp.mp.dps = 40


def eps_from_masses(base, others):
    """max over neighbours and bins of |log P(bin | D') - log P(bin | D)|."""
    return max(
        abs(mp.log(o) - mp.log(b)) for other in others for o, b in zip(other, base, strict=True)
    )


# ----------------------------------------------------------------------------------------
# Beta-Binomial (Charest & Han Table 2 setting: n = 5, a = b = 1/2)
# ----------------------------------------------------------------------------------------
def beta_pdf(a, b):
    norm = mp.beta(a, b)

    def pdf(t):
        # tanh-sinh nodes can round onto an end point where the density is singular;
        # a single point has measure zero.
        if t <= 0 or t >= 1:
            return mp.mpf(0)
        return t ** (a - 1) * (1 - t) ** (b - 1) / norm

    return pdf


def beta_quantile(a, b, q):
    """Solve I_t(a, b) = q for t: Newton, with bisection when Newton leaves the bracket."""
    if q == 0:
        return mp.mpf(0)
    if q == 1:
        return mp.mpf(1)
    pdf = beta_pdf(a, b)
    lo, hi = mp.mpf(0), mp.mpf(1)
    t = q  # any interior start point; the bracket guarantees convergence
    for _ in range(500):
        f = mp.betainc(a, b, 0, t, regularized=True) - q
        if f > 0:
            hi = t
        else:
            lo = t
        step = t - f / pdf(t)
        t_new = step if lo < step < hi else (lo + hi) / 2
        if abs(t_new - t) <= mp.mpf(10) ** -36 * t:
            return t_new
        t = t_new
    raise RuntimeError("beta_quantile did not converge")


def beta_masses(a, b, edges):
    pdf = beta_pdf(a, b)
    return [mp.quad(pdf, [lo, hi]) for lo, hi in itertools.pairwise(edges)]


def beta_binomial_eps(n, x, a, b, n_bins, neighbour):
    a1, b1 = a + x, b + n - x
    edges = [beta_quantile(a1, b1, mp.mpf(j) / n_bins) for j in range(n_bins + 1)]
    base = beta_masses(a1, b1, edges)
    if neighbour == "replace":
        params = [(a + xp, b + n - xp) for xp in (x - 1, x + 1) if 0 <= xp <= n]
    else:
        params = []
        if x >= 1:
            params.append((a + x - 1, b + n - x))
        if x < n:
            params.append((a + x, b + n - 1 - x))
    return eps_from_masses(base, [beta_masses(p, q, edges) for p, q in params])


# ----------------------------------------------------------------------------------------
# Normal-Normal
# ----------------------------------------------------------------------------------------
def normal_posterior(y, sigma2, mu0, sigma02):
    n = len(y)
    mean = (sigma2 * mu0 + sigma02 * mp.fsum(y)) / (sigma2 + n * sigma02)
    var = sigma02 * sigma2 / (n * sigma02 + sigma2)
    return mean, mp.sqrt(var)


def normal_masses(m, s, edges):
    pdf = lambda t: mp.npdf(t, m, s)  # noqa: E731
    return [mp.quad(pdf, [lo, hi]) for lo, hi in itertools.pairwise(edges)]


def normal_edges(m, s, n_bins):
    def q(j):
        if j == 0:
            return -mp.inf
        if j == n_bins:
            return mp.inf
        return m + s * mp.sqrt(2) * mp.erfinv(2 * mp.mpf(j) / n_bins - 1)

    return [q(j) for j in range(n_bins + 1)]


def normal_pointwise_eps(y, sigma2, mu0, sigma02, n_bins, neighbour, replacements=None):
    m, s = normal_posterior(y, sigma2, mu0, sigma02)
    edges = normal_edges(m, s, n_bins)
    base = normal_masses(m, s, edges)
    out = []
    for i in range(len(y)):
        if neighbour == "remove":
            datasets = [y[:i] + y[i + 1 :]]
        else:
            datasets = [[*y[:i], r, *y[i + 1 :]] for r in replacements[i]]
        others = [
            normal_masses(*normal_posterior(d, sigma2, mu0, sigma02), edges) for d in datasets
        ]
        out.append(eps_from_masses(base, others))
    return out


def fmt(v):
    return mp.nstr(v, 15)


if __name__ == "__main__":
    half = mp.mpf(1) / 2
    print("# Beta-Binomial, n=5, a=b=1/2, neighbour='replace' (Charest & Han Table 2)")
    print("# rows x = 0..5, columns B = 5, 10, 20, 50, 100, 250")
    print("TABLE2_EXACT = [")
    for x in range(6):
        row = [
            beta_binomial_eps(5, x, half, half, nb, "replace") for nb in (5, 10, 20, 50, 100, 250)
        ]
        print("    [" + ", ".join(fmt(v) for v in row) + "],")
    print("]")
    print("# Beta-Binomial, n=5, a=b=1/2, neighbour='remove', x = 0..5, B = 5 and B = 50")
    for nb in (5, 50):
        vals = [beta_binomial_eps(5, x, half, half, nb, "remove") for x in range(6)]
        print(f"REMOVE_B{nb} = [" + ", ".join(fmt(v) for v in vals) + "]")
    print("# Beta-Binomial, n=12, x=3, a=2, b=0.7 (asymmetric), B = 20: replace, remove")
    for nbr in ("replace", "remove"):
        v = beta_binomial_eps(12, 3, mp.mpf(2), mp.mpf(7) / 10, 20, nbr)
        print(f"ASYM_{nbr.upper()} = {fmt(v)}")

    # Normal-Normal, Charest & Han's parameters (sigma^2 = 5, mu0 = 10, sigma0^2 = 3)
    y = [mp.mpf(v) / 10 for v in (81, 127, 94, 152, 103, 69, 250)]
    print("# Normal-Normal: y =", [mp.nstr(v, 4) for v in y], "sigma^2=5, mu0=10, sigma0^2=3")
    for nb in (5, 20, 100):
        vals = normal_pointwise_eps(y, 5, 10, 3, nb, "remove")
        print(f"NN_REMOVE_B{nb} = [" + ", ".join(fmt(v) for v in vals) + "]")
    reps = [[v + 4, mp.mpf(10)] for v in y]
    vals = normal_pointwise_eps(y, 5, 10, 3, 20, "replace", reps)
    print("# replace, B = 20, replacements (y_i + 4, 10) for each record")
    print("NN_REPLACE_B20 = [" + ", ".join(fmt(v) for v in vals) + "]")
    # A larger dataset of rational values, n = 100: y_i = 10 + ((37 i) mod 101 - 50) / 10
    y100 = [10 + mp.mpf((37 * i) % 101 - 50) / 10 for i in range(100)]
    vals = normal_pointwise_eps(y100, 5, 10, 3, 50, "remove")
    print(f"NN100_REMOVE_B50_MAX = {fmt(max(vals))}")
    print(f"NN100_REMOVE_B50_ARGMAX = {vals.index(max(vals))}")
