"""Sphinx configuration of the pymc_edp documentation.

Build with ``scripts/build_docs.sh`` (``sphinx-build -W --keep-going -b html docs
docs/_build/html``). The notebooks in ``notebooks/`` (linked into the site as
``docs/notebooks``) are executed by myst-nb during the build; any error in a cell fails it.
"""

import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

import pymc_edp  # noqa: E402

project = "pymc_edp"
author = "pymc_edp developers"
copyright = "2025, pymc_edp developers"
version = release = pymc_edp.__version__

extensions = [
    "myst_nb",
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_copybutton",
]

source_suffix = {".rst": "restructuredtext", ".md": "myst-nb", ".ipynb": "myst-nb"}
root_doc = "index"
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "**.ipynb_checkpoints",
    "notebooks/README.md",
    "jupyter_execute",
]

# --- MyST / myst-nb ---------------------------------------------------------------------
myst_enable_extensions = ["dollarmath", "amsmath", "colon_fence", "deflist"]
myst_heading_anchors = 3
# Every notebook is executed on every clean build; "cache" reuses results between local
# rebuilds (docs/_build/.jupyter_cache) and re-executes a notebook whenever its code changes.
nb_execution_mode = os.environ.get("PYMC_EDP_NB_EXECUTION", "cache")
nb_execution_cache_path = str(ROOT / "docs" / "_build" / ".jupyter_cache")
nb_execution_timeout = int(os.environ.get("PYMC_EDP_NB_TIMEOUT", "300"))  # seconds per cell
nb_execution_raise_on_error = True
nb_execution_show_tb = True
nb_merge_streams = True
nb_kernel_rgx_aliases = {".*": "python3"}

# --- autodoc / numpydoc -----------------------------------------------------------------
autodoc_default_options = {"members": True, "member-order": "bysource"}
autodoc_typehints = "none"
autosummary_generate = False
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_xref_param_type = False
numpydoc_validation_checks: set = set()
# numpydoc renames every docstring's "References" labels to unique ones; a reference listed
# but not cited in the text is a style choice, not a broken link.
suppress_warnings = ["ref.citation"]

# --- HTML ---------------------------------------------------------------------------------
html_theme = "pydata_sphinx_theme"
html_title = "pymc_edp"
html_static_path: list = []
html_theme_options = {
    "navigation_with_keys": False,
    "show_toc_level": 2,
    "secondary_sidebar_items": ["page-toc"],
}
html_show_sourcelink = False
# Nothing is fetched from the network at build time; MathJax is loaded by the reader's
# browser from its CDN (pages stay readable, with raw TeX, when offline).
