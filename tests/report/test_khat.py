"""The k-hat classes and counts (:mod:`pymc_edp.report.khat`), one for every view."""

import dataclasses
from html.parser import HTMLParser

import matplotlib.pyplot as plt
import numpy as np
import pytest
from support import normal_audit, normal_draws

from pymc_edp.plots import KHAT_COLORS, plot_pointwise_epsilon
from pymc_edp.report import KhatCounts, khat_counts
from pymc_edp.report.khat import NOT_COMPUTED

CLASSES = ("good", "bad", "very bad", NOT_COMPUTED)


@pytest.fixture(autouse=True)
def _close_figures():
    yield
    plt.close("all")


class Rows(HTMLParser):
    """The table rows of an HTML fragment, as lists of cell texts."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.rows: list[list[str]] = []
        self._cell: list[str] | None = None
        self.feed(markup)

    def handle_starttag(self, tag, attrs):
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None

    def handle_data(self, data):
        if self._cell is not None:
            self._cell.append(data)

    def row(self, first: str) -> list[str]:
        return next(r for r in self.rows if r and r[0] == first)


@pytest.fixture(scope="module")
def mixed_result():
    """An audit of 100 records, some pruned (no k-hat, no epsilon), some refitted.

    Refitted neighbours keep the k-hat that sent them to a refit (bad, very bad), or none
    (refitted without weights); pruned ones have neither a k-hat nor an epsilon.
    """
    res = normal_audit(normal_draws(np.random.default_rng(3), 2, 1000), bins=10)
    pw = res.pointwise
    n = res.n_neighbours
    method = np.full(n, "psis", dtype=object)
    khat = pw["pareto_k"].values.copy()
    eps = pw["epsilon"].values.copy()
    khat[:] = np.minimum(khat, 0.3)  # good unless set below
    method[[20, 21, 22]] = "pruned"
    khat[[20, 21, 22]] = np.nan
    eps[[20, 21, 22]] = np.nan
    method[[4, 9, 40]] = "refit"
    khat[[4, 9, 40]] = [0.85, 1.3, np.nan]
    khat[[50, 51]] = [0.9, 2.0]  # bad and very bad, not refitted
    pw = pw.assign(
        method=("neighbour", method.astype(str)),
        pareto_k=("neighbour", khat),
        epsilon=("neighbour", eps),
    )
    return dataclasses.replace(res, pointwise=pw)


EXPECTED = {"good": 92, "bad": 2, "very bad": 2, NOT_COMPUTED: 4}


def test_khat_counts_of_a_result(mixed_result):
    counts = khat_counts(mixed_result)
    assert counts.as_dict() == EXPECTED
    assert counts.threshold == mixed_result.khat_threshold
    assert counts.above_threshold == 4 and counts.not_computed == 4
    assert counts.classes.shape == (mixed_result.n_neighbours,)
    assert counts.classes[[20, 40]].tolist() == [NOT_COMPUTED, NOT_COMPUTED]
    # percentages of the 96 neighbours with a k-hat
    assert [r[2] for r in counts.rows] == [92, 2, 2]
    assert counts.rows[1][3] == pytest.approx(100 * 2 / 96)


def test_text_html_and_figure_give_the_same_counts(mixed_result):
    """One result with pruned and refitted neighbours: the printout, the HTML view and the
    figure (``res.plot()``'s per-record panel, and ``plot_pointwise_epsilon``) count every
    k-hat class alike, from the one classifier."""
    res = mixed_result
    thr = res.khat_threshold
    ranges = {"good": f"(-Inf, {thr:.2f}]", "bad": f"({thr:.2f}, 1]", "very bad": "(1, Inf)"}
    known = sum(EXPECTED[c] for c in ranges)

    text = str(res).splitlines()
    from_text = {}
    for cls, rng in ranges.items():
        line = next(ln for ln in text if ln.strip().startswith(rng) and f"({cls})" in ln)
        count, pct = line.split()[-2:]
        assert pct == f"{100 * int(count) / known:.1f}%"
        from_text[cls] = int(count)
    from_text[NOT_COMPUTED] = int(
        next(ln for ln in text if ln.startswith("not computed")).split()[-1]
    )

    rows = Rows(res._repr_html_())
    from_html = {cls: int(rows.row(rng)[2]) for cls, rng in ranges.items()}
    from_html[NOT_COMPUTED] = int(rows.row("not computed")[2])
    assert rows.row("refit")[1] == "3" and rows.row("pruned")[1] == "3"

    def from_figure(ax):
        counts, markers = {}, {}
        for coll in ax.collections:
            label = coll.get_label()
            cls = label.split(" (")[0]
            if cls in KHAT_COLORS:
                counts[cls] = int(label.rsplit(": ", 1)[1])
                markers[cls] = coll.get_offsets().shape[0]
        assert markers == counts  # one marker per neighbour of the class
        return counts

    axes = res.plot()
    overview = from_figure(axes[0, 0])
    legend = {t.get_text().split(" (")[0] for t in axes[0, 0].get_legend().get_texts()}
    assert set(CLASSES) <= legend
    single = from_figure(plot_pointwise_epsilon(res))
    refitted = [c for c in plt.gca().collections if c.get_label().startswith("refitted")]
    assert refitted[0].get_label() == "refitted: 3"

    assert from_text == from_html == overview == single == EXPECTED


def test_khat_counts_without_pareto_k(mixed_result):
    res = dataclasses.replace(mixed_result, pointwise=mixed_result.pointwise.drop_vars("pareto_k"))
    counts = khat_counts(res)
    assert counts.not_computed == res.n_neighbours
    assert counts.as_dict()[NOT_COMPUTED] == res.n_neighbours


def test_khat_counts_reduce_extra_dimensions():
    """A k-hat per (neighbour, parameter): the neighbour's class is its largest k-hat's."""
    import xarray as xr

    pw = xr.Dataset(
        {"pareto_k": (("neighbour", "parameter"), [[0.1, 0.8], [0.2, 0.3], [np.nan, np.nan]])},
        coords={"neighbour": ["a", "b", "c"]},
    )
    res = type("R", (), {"pointwise": pw, "khat_threshold": 0.7})()
    assert khat_counts(res).classes.tolist() == ["bad", "good", NOT_COMPUTED]


def test_khat_counts_threshold_defaults_to_0_7():
    import xarray as xr

    pw = xr.Dataset({"pareto_k": ("neighbour", [0.69, 0.71])})
    res = type("R", (), {"pointwise": pw})()
    assert khat_counts(res).classes.tolist() == ["good", "bad"]


def test_khat_counts_from_values_boundaries():
    k = [-np.inf, 0.5, 0.69, 0.7, 1.0, 1.2, np.inf, np.nan]
    counts = KhatCounts.from_values(k, 0.69)
    assert counts.classes.tolist() == [
        "good",
        "good",
        "good",
        "bad",
        "bad",
        "very bad",
        "very bad",
        NOT_COMPUTED,
    ]
    assert counts.count("very bad") == 2 and counts.not_computed == 1
