"""The HTML views of the results (``_repr_html_``), parsed back with the standard library."""

import dataclasses
import re
import sys
from html.parser import HTMLParser

import numpy as np
import pytest
import xarray as xr
from support import NOT_CONVERGED, normal_audit, normal_draws, regression_audit, tuning_result

import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools
from pymc_edp.plots import html as edp_html
from pymc_edp.results.tuning import LEAKAGE_CAVEAT


class Page(HTMLParser):
    """Text, tags, attributes, styles and table rows of an HTML fragment."""

    def __init__(self, markup: str):
        super().__init__(convert_charrefs=True)
        self.tags: list[tuple[str, dict]] = []
        self.text: list[str] = []
        self.style: list[str] = []
        self.rows: list[list[str]] = []
        self._stack: list[str] = []
        self._cell: list[str] | None = None
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))
        self._stack.append(tag)
        if tag == "tr":
            self.rows.append([])
        elif tag in ("td", "th"):
            self._cell = []

    def handle_startendtag(self, tag, attrs):
        self.tags.append((tag, dict(attrs)))

    def handle_endtag(self, tag):
        if tag in ("td", "th") and self._cell is not None:
            self.rows[-1].append("".join(self._cell).strip())
            self._cell = None
        while self._stack:  # tolerate unclosed tags inside the SVG
            if self._stack.pop() == tag:
                break

    def handle_data(self, data):
        if self._stack and self._stack[-1] == "style":
            self.style.append(data)
            return
        self.text.append(data)
        if self._cell is not None:
            self._cell.append(data)

    @property
    def all_text(self) -> str:
        return " ".join(" ".join(self.text).split())

    def row(self, first: str) -> list[str]:
        (found,) = [r for r in self.rows if r and r[0] == first]
        return found


def _check_self_contained(markup: str, page: Page) -> None:
    names = [tag for tag, _ in page.tags]
    assert "script" not in names and "link" not in names and "iframe" not in names
    assert "<script" not in markup.lower()
    for _, attrs in page.tags:
        assert not any(k.startswith("on") for k in attrs)  # no inline event handlers
        for key in ("href", "xlink:href", "src"):
            if key in attrs:
                assert attrs[key].startswith("#"), (key, attrs[key])
    assert "url(" not in "".join(page.style) and "@import" not in "".join(page.style)
    assert not re.search(r"https?://(?!www\.w3\.org/)", markup)  # only SVG namespaces


def _same(a: str, b: str) -> bool:
    """Equal up to the SVG's element ids, which matplotlib draws at random (no clashes)."""
    ids = set(re.findall(r'id="([^"]+)"', a)) | set(re.findall(r'id="([^"]+)"', b))
    pattern = re.compile("|".join(re.escape(i) for i in sorted(ids, key=len, reverse=True)))
    return pattern.sub("ID", a) == pattern.sub("ID", b)


def _svg(markup: str) -> str:
    return markup[markup.index("<svg") : markup.index("</svg>") + len("</svg>")]


@pytest.fixture(scope="module")
def audit_result():
    """A Normal-mean audit of 100 records with warnings and mixed neighbour methods."""
    res = normal_audit(normal_draws(np.random.default_rng(3), 2, 1000), bins=10)
    method = np.full(res.n_neighbours, "psis", dtype=object)
    method[[4, 9]] = "refit"
    method[17] = "moment_match"  # any value of pointwise["method"] is counted
    pw = res.pointwise.assign(method=("neighbour", method.astype(str)))
    khat = pw["pareto_k"].values.copy()
    khat[[4, 9]] = [0.85, 1.3]
    pw["pareto_k"] = ("neighbour", khat)
    return dataclasses.replace(
        res,
        pointwise=pw,
        warnings=(
            "Pareto k-hat above 0.70 for 2 of 100 neighbours",
            "a <b>tagged</b> & 'quoted' warning",
        ),
    )


def test_audit_html_shows_epsilon_interval_table_khat_and_warnings(audit_result):
    res = audit_result
    markup = res._repr_html_()
    assert _same(markup, edp_html.edp_result_html(res))
    page = Page(markup)
    text = page.all_text
    # epsilon, as printed, and its 90% Monte-Carlo interval
    assert f"{res.epsilon:.3f}" in text
    lo, hi = res.mc_interval90
    assert f"[{lo:.3f}, {hi:.3f}]" in text
    assert f"B = {res.bins}" in text
    # the parameter table: epsilon, worst neighbour, bins
    header = page.row("parameter")
    assert header == ["parameter", "ε", "worst neighbour", "worst bin", "bins"]
    mu = page.row("mu")
    assert mu[1] == f"{res.epsilon:.3f}"
    assert mu[2] == str(res.worst_neighbour)
    assert mu[4] == str(int(res.parameters["mu"]["n_bins"]))
    # the k-hat table, and how each neighbour posterior was obtained
    thr = f"{res.khat_threshold:.2f}"
    assert page.row(f"(-Inf, {thr}]")[1:3] == ["good", "98"]
    assert page.row(f"({thr}, 1]")[1:] == ["bad", "1", "1.0%"]
    assert page.row("(1, Inf)")[1:] == ["very bad", "1", "1.0%"]
    assert page.row("psis")[1] == "97"
    assert page.row("refit")[1] == "2"
    assert page.row("moment_match")[1] == "1"
    assert "2 above 0.70, 2 refitted" in text
    # every warning, escaped (so a tag in a warning is text, not markup)
    for warning in res.warnings:
        assert warning in text
    assert "<b>tagged</b>" not in markup and "&lt;b&gt;tagged&lt;/b&gt;" in markup
    assert "b" not in [tag for tag, _ in page.tags]
    # collapsible sections, an inline SVG of a few KB, nothing external
    names = [tag for tag, _ in page.tags]
    assert names.count("details") == names.count("summary") >= 4
    assert names.count("svg") == 1
    assert len(_svg(markup).encode()) < 30_000
    assert "<?xml" not in markup and "<!DOCTYPE" not in markup
    _check_self_contained(markup, page)
    # the plain repr is unchanged
    assert repr(res).startswith("Empirical DP audit (B-EDP, B = 10, psis)")


def test_style_is_scoped_and_follows_the_dark_theme(audit_result):
    page = Page(audit_result._repr_html_())
    css, svg_css = page.style  # the view's, and matplotlib's inside the SVG
    assert css == edp_html.CSS
    assert "@media (prefers-color-scheme: dark)" in css
    assert 'body[data-jp-theme-light="false"] .pedp-wrap' in css
    assert "var(--jp-content-font-color0, inherit)" in css
    # every rule is scoped under the view's own class
    rules = re.sub(r"@media[^{]*\{", "", css + svg_css)
    selectors = [s.strip() for s in re.findall(r"([^{}]+)\{", rules)]
    for group in selectors:
        for selector in group.split(","):
            assert edp_html.CSS_CLASS in selector, selector
    assert page.tags[0] == ("div", {"class": edp_html.CSS_CLASS})


@NOT_CONVERGED
def test_eight_schools_labels_are_escaped_and_parsed_back():
    res = edp.audit(
        load_eight_schools(),
        var_names="mu",
        bins=10,
        method="psis",
        progressbar=False,
    )
    markup = res._repr_html_()
    page = Page(markup)
    assert "St. Paul&#x27;s" in markup
    assert page.row("mu")[2] == "St. Paul's"
    assert f"{res.epsilon:.3f}" in page.all_text
    assert page.row("psis")[1] == "8"
    assert "Warnings (0)" in page.all_text
    svg = _svg(markup)
    assert "St. Paul" in svg  # the worst neighbour is labelled in the figure


def test_figure_stays_small_for_many_neighbours(audit_result):
    n = 20_000
    rng = np.random.default_rng(0)
    pw = xr.Dataset(
        {
            "epsilon": ("neighbour", rng.gamma(2.0, 0.05, n)),
            "pareto_k": ("neighbour", rng.uniform(-0.2, 0.9, n)),
            "method": ("neighbour", np.full(n, "psis")),
        },
        coords={"neighbour": np.arange(n)},
    )
    big = dataclasses.replace(audit_result, pointwise=pw)
    svg = edp_html.epsilon_svg(big)
    assert svg.startswith("<svg") and len(svg.encode()) < 30_000
    page = Page(big._repr_html_())
    assert "sorted" in page.all_text and "20000 neighbours" in page.all_text


def test_view_without_matplotlib_has_no_figure(audit_result, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)
    markup = audit_result._repr_html_()
    assert "<svg" not in markup
    assert "install matplotlib" in Page(markup).all_text
    assert f"{audit_result.epsilon:.3f}" in markup


def _tuning_result(audit=None):
    return tuning_result(
        mcse=0.012,
        monotone=False,
        stopped="noise",
        trials=xr.Dataset(
            {
                "value": ("trial", [1.73, 0.9, 1.3, 1.2]),
                "epsilon": ("trial", [0.45, 0.22, 0.33, 0.30]),
                "mcse": ("trial", [0.02, 0.01, 0.015, 0.012]),
                "stage": ("trial", ["initial", "bracket", "root", "final"]),
            }
        ),
        utility=xr.DataTree.from_dict(
            {"mu": xr.Dataset({"mean_shift": 0.05, "sd_ratio": 0.8, "audited": True})}
        ),
        warnings=(LEAKAGE_CAVEAT, "epsilon is not monotone <here>"),
        audit=audit,
    )


def test_tuning_html_shows_value_epsilon_target_utility_and_warnings():
    res = _tuning_result()
    markup = res._repr_html_()
    assert _same(markup, edp_html.tuning_result_html(res))
    page = Page(markup)
    text = page.all_text
    assert "pymc_edp.PriorTuningResult" in text
    assert "sigma0" in text and "1.2 (untuned 1.73" in text
    assert "0.3100 ± 0.0120 (MCSE, psis)" in text
    assert "0.3000 (relative error +3.3%)" in text
    assert "NOT monotone" in text
    for warning in res.warnings:
        assert warning in text
    assert page.row("mu") == ["mu", "0.05", "0.8"]
    assert page.row("parameter") == ["parameter", "mean_shift", "sd_ratio"]
    assert page.row("trial") == ["trial", "value", "epsilon", "mcse", "stage"]
    assert len([r for r in page.rows if r and r[-1] in {"initial", "bracket", "root", "final"}])
    assert len(_svg(markup).encode()) < 30_000
    _check_self_contained(markup, page)
    assert repr(res).startswith("Prior tuned to a target B-EDP")


def test_tuning_html_nests_the_confirmation_audit(audit_result):
    res = _tuning_result(audit=audit_result)
    markup = res._repr_html_()
    page = Page(markup)
    assert markup.count("<style>") == 1  # the nested view shares it (the SVGs have theirs)
    assert "Confirmation audit" in page.all_text
    assert "pymc_edp.EDPResult" in page.all_text
    assert f"{audit_result.epsilon:.3f}" in page.all_text
    assert markup.count("<svg") == 2


def test_tuning_html_of_the_docstring_example_without_epsilons():
    res = dataclasses.replace(
        _tuning_result(),
        trials=xr.Dataset({"value": ("trial", [1.73, 1.2])}),
        utility=xr.DataTree(),
        warnings=(),
    )
    page = Page(res._repr_html_())
    assert "2 trial values" in page.all_text
    assert "(empty)" in page.all_text and "Warnings (0)" in page.all_text


def test_query_result_is_a_dataset_with_xarrays_html(query_result):
    """The query-level profile has no result class: Jupyter shows xarray's HTML view."""
    assert type(query_result) is xr.Dataset
    page = Page(query_result._repr_html_())
    assert "delta_star" in page.all_text and "epsilon" in page.all_text


def test_noise_caution_follows_the_interval_not_emi(audit_result):
    """The caution comes from the estimator's own interval, in the view and its warnings.

    A large EMI (Abowd's refit-and-count noise floor) with an interval clear of zero gives
    no caution; an interval that reaches zero does, beside epsilon and counted among the
    warnings, in the words of the printout.
    """
    res = audit_result
    lo, hi = res.mc_interval90
    assert lo > 0
    quiet = Page(dataclasses.replace(res, noise_floor=res.epsilon)._repr_html_())
    assert "caution" not in quiet.all_text.lower() and "EMI" not in quiet.all_text
    noisy = dataclasses.replace(res, mc_interval90=(0.0, hi))
    caution = edp.report.headline(noisy).caution
    assert "reaches 0" in caution
    page = Page(noisy._repr_html_())
    assert caution in page.all_text
    n_warnings = len(res.warnings) + 1
    assert f"Warnings ({n_warnings})" in page.all_text
    assert f"Caution: {caution}" in repr(noisy)


def test_text_html_and_figures_share_one_khat_classifier(audit_result):
    """Issue 21: the figure used 0.5 / 0.7, the table 0.7 / 1, and the HTML counted pruned
    (NaN) neighbours in its percentages. One classifier now serves every view."""
    from pymc_edp.report import khat_counts

    pw = audit_result.pointwise
    khat = pw["pareto_k"].values.copy()
    khat[[20, 21, 22]] = np.nan  # pruned: no k-hat
    khat[30] = 0.6  # "ok" under the figure's old 0.5 / 0.7 classes: good here
    method = pw["method"].values.copy()
    method[[20, 21, 22]] = "pruned"
    res = dataclasses.replace(
        audit_result,
        pointwise=pw.assign(pareto_k=("neighbour", khat), method=("neighbour", method)),
    )
    thr = res.khat_threshold
    figure = khat_counts(res).classes  # the classes the figures colour by
    expected = {cls: int(np.sum(figure == cls)) for cls in ("good", "bad", "very bad")}
    assert expected == {"good": 95, "bad": 1, "very bad": 1}
    known = sum(expected.values())  # 97: pruned neighbours are in no percentage
    page = Page(res._repr_html_())
    text = repr(res)
    for rng, cls in [
        (f"(-Inf, {thr:.2f}]", "good"),
        (f"({thr:.2f}, 1]", "bad"),
        ("(1, Inf)", "very bad"),
    ]:
        count, pct = expected[cls], f"{100 * expected[cls] / known:.1f}%"
        assert page.row(rng)[1:] == [cls, str(count), pct]
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(rng))
        assert f"({cls})" in line and line.split()[-2:] == [str(count), pct]
    assert page.row("not computed")[2] == "3"
    assert any(ln.startswith("not computed") and ln.split()[-1] == "3" for ln in text.splitlines())


def test_a_long_vector_lists_the_rows_the_printout_lists():
    """Issue 39: the parameter table lists a long variable's most exposed elements, with the
    printout's note under them, in the order of the printout (235 rows before)."""
    res = regression_audit()
    page = Page(edp_html.edp_result_html(res))
    table = [
        row
        for row in page.rows
        if row and (row[0][:2] in ("a", "b", "mu") or row[0][:4] == "... ")
    ]
    printed = [
        line.split()[0] for line in repr(res).splitlines() if line[:2] in ("a ", "b ", "mu")
    ]
    printed += [line for line in repr(res).splitlines() if line.startswith("... and")]
    assert [row[0] for row in table] == printed
    assert len(table) == 2 + edp.report.text.MAX_ELEMENTS + 1
    assert table[-1] == ["... and 190 more elements of mu (res.epsilon_by_var['mu'])"]
