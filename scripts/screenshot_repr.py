"""Screenshot an audit's HTML view as an exported notebook shows it in a browser.

Four steps, each a function below: build a small notebook that audits the eight-schools
posterior and ends a cell with the result (:func:`build_notebook`, nbformat), execute it
(:func:`execute`, nbclient and an IPython kernel), export it to HTML (:func:`export_html`,
nbconvert's JupyterLab template), and open the page in headless Chromium to take a PNG
screenshot (:func:`screenshot`). The browser resolves no host name, so the page must render
offline, as the view promises.

Usage::

    python scripts/screenshot_repr.py                      # -> docs/figures/html_repr.png
    python scripts/screenshot_repr.py --theme dark --out /tmp/dark.png

Needs nbformat, nbclient, nbconvert and ipykernel (the ``test`` extra) and Chromium
(``apt-get install chromium``; ``--chromium`` or ``$CHROMIUM`` point to another binary).
``tests/plots/test_html_browser.py`` runs the same steps.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "docs" / "figures" / "html_repr.png"
#: Browser names tried in turn when neither ``--chromium`` nor ``$CHROMIUM`` is given.
CHROMIUM_NAMES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

AUDIT_CELL = """\
import pymc_edp as edp
from pymc_edp.datasets import load_eight_schools

idata = load_eight_schools()
res = edp.audit(idata, var_names="mu", bins=10, method="psis", progressbar=False)
res"""


def build_notebook():
    """A notebook with a title and one cell that audits eight schools and shows ``res``."""
    import nbformat

    nb = nbformat.v4.new_notebook()
    nb.cells = [
        nbformat.v4.new_markdown_cell("### The HTML view of an audit result"),
        nbformat.v4.new_code_cell(AUDIT_CELL),
    ]
    nb.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3"}
    nb.metadata["language_info"] = {"name": "python"}
    return nb


def execute(nb, workdir: Path, *, timeout: int = 600):
    """Run every cell in a fresh IPython kernel started in ``workdir``; return ``nb``."""
    from nbclient import NotebookClient

    env = {"MPLBACKEND": "Agg", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}
    os.environ.update({k: v for k, v in env.items() if k not in os.environ})
    client = NotebookClient(
        nb,
        timeout=timeout,
        kernel_name="python3",
        resources={"metadata": {"path": str(workdir)}},
    )
    client.execute()
    return nb


def export_html(nb, *, theme: str = "light") -> str:
    """The notebook as a standalone HTML page (nbconvert, JupyterLab template)."""
    from nbconvert import HTMLExporter

    exporter = HTMLExporter(template_name="lab", theme=theme)
    body, _ = exporter.from_notebook_node(nb)
    return body


def find_chromium(explicit: str | None = None) -> str | None:
    """Path of a Chromium binary: ``explicit``, ``$CHROMIUM``, or the first on ``PATH``."""
    for name in (explicit, os.environ.get("CHROMIUM"), *CHROMIUM_NAMES):
        if name and (path := shutil.which(name)):
            return path
    return None


def screenshot(
    page: Path,
    png: Path,
    *,
    chromium: str,
    size: tuple[int, int] = (1000, 760),
    timeout: int = 120,
) -> Path:
    """Open ``page`` in headless Chromium (offline: no host resolves) and save a PNG."""
    png.parent.mkdir(parents=True, exist_ok=True)
    cmd = [
        chromium,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
        "--host-resolver-rules=MAP * ~NOTFOUND",
        f"--window-size={size[0]},{size[1]}",
        f"--screenshot={png}",
        page.resolve().as_uri(),
    ]
    subprocess.run(cmd, check=True, capture_output=True, timeout=timeout)
    if not png.exists():
        raise RuntimeError(f"Chromium wrote no screenshot to {png}")
    return png


def run(
    workdir: Path,
    png: Path,
    *,
    chromium: str | None = None,
    theme: str = "light",
    size: tuple[int, int] = (1000, 760),
) -> tuple[Path, Path]:
    """All four steps: the exported page (in ``workdir``) and the screenshot ``png``."""
    browser = find_chromium(chromium)
    if browser is None:
        raise FileNotFoundError("no Chromium found: install it or pass --chromium PATH")
    workdir.mkdir(parents=True, exist_ok=True)
    nb = execute(build_notebook(), workdir)
    page = workdir / "html_repr.html"
    page.write_text(export_html(nb, theme=theme), encoding="utf-8")
    return page, screenshot(page, png, chromium=browser, size=size)


def main(argv: list[str] | None = None) -> int:
    """Command line: ``python scripts/screenshot_repr.py [--out PNG] [--theme dark]``."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="PNG to write")
    parser.add_argument("--workdir", type=Path, default=None, help="keep the notebook page here")
    parser.add_argument("--theme", choices=("light", "dark"), default="light")
    parser.add_argument("--chromium", default=None, help="Chromium binary")
    parser.add_argument("--size", default="1000x760", help="window size, WIDTHxHEIGHT")
    args = parser.parse_args(argv)
    options = dict(
        chromium=args.chromium,
        theme=args.theme,
        size=tuple(int(v) for v in args.size.lower().split("x")),
    )
    if args.workdir is None:
        import tempfile

        with tempfile.TemporaryDirectory() as tmp:
            _, png = run(Path(tmp), args.out, **options)
    else:
        page, png = run(args.workdir, args.out, **options)
        print(f"page: {page}")
    print(f"screenshot: {png} ({png.stat().st_size // 1024} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
