"""A notebook shows the audit's HTML view in a real browser (``scripts/screenshot_repr.py``).

The notebook is built with nbformat, executed with nbclient, exported with nbconvert and
opened by headless Chromium, offline. Skipped only when Chromium or the notebook tools are
not installed (CI installs both: the ``test`` extra and Debian's ``chromium``).
"""

import importlib.util
from html.parser import HTMLParser
from pathlib import Path

import pytest
from support import NOT_CONVERGED

for _name in ("nbformat", "nbclient", "nbconvert", "ipykernel"):
    pytest.importorskip(_name, reason=f"{_name} is not installed (pip install -e '.[test]')")

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "screenshot_repr.py"


def _script():
    spec = importlib.util.spec_from_file_location("screenshot_repr", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class _Views(HTMLParser):
    """Text and table cells inside the pymc_edp view(s) of a page."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.depth = 0  # > 0 inside a view
        self.text: list[str] = []
        self.cells: list[str] = []
        self.tags: list[str] = []
        self._in_cell = False

    def handle_starttag(self, tag, attrs):
        classes = (dict(attrs).get("class") or "").split()
        if self.depth or (tag == "div" and "pedp-wrap" in classes):
            if tag == "div":
                self.depth += 1
            self.tags.append(tag)
            self._in_cell = tag == "td"

    def handle_endtag(self, tag):
        if self.depth and tag == "div":
            self.depth -= 1
        if tag == "td":
            self._in_cell = False

    def handle_data(self, data):
        if self.depth:
            self.text.append(data)
            if self._in_cell:
                self.cells.append(data.strip())


@pytest.mark.slow
@pytest.mark.both_stacks
@NOT_CONVERGED
def test_exported_notebook_shows_the_table_in_chromium(tmp_path, monkeypatch):
    script = _script()
    chromium = script.find_chromium()
    if chromium is None:
        pytest.skip("no Chromium on PATH (apt-get install chromium, or set $CHROMIUM)")
    monkeypatch.setenv("MPLBACKEND", "Agg")
    page, png = script.run(tmp_path, tmp_path / "html_repr.png", chromium=chromium)
    # the screenshot: a PNG of some size (a blank page is about 1 KB)
    data = png.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    assert len(data) > 20_000
    # the exported page holds the executed view: its tables, with the epsilon value
    import pymc_edp as edp
    from pymc_edp.datasets import load_eight_schools

    res = edp.audit(
        load_eight_schools(), var_names="mu", bins=10, method="psis", progressbar=False
    )
    views = _Views()
    views.feed(page.read_text(encoding="utf-8"))
    assert "table" in views.tags and "svg" in views.tags and "details" in views.tags
    text = " ".join(views.text)
    assert "pymc_edp.EDPResult" in text
    assert f"{res.epsilon:.3f}" in views.cells
    assert "St. Paul's" in views.cells
    lo, hi = res.mc_interval90
    assert f"[{lo:.3f}, {hi:.3f}]" in text
