"""Where the kernels' compiled code is cached (:mod:`pymc_edp.runtime.jit`)."""

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numba
import pytest

from pymc_edp.base import binning, mcse
from pymc_edp.runtime import jit


def test_kernels_cache_in_the_user_folder_not_in_the_package():
    """A cache inside site-packages/pymc_edp would outlive the install and shadow the next.

    ``pip install .`` then ``pip install -e .`` left ``pymc_edp/base/__pycache__/*.nbi``
    behind, and that folder made ``pymc_edp`` a namespace package (issue 21).
    """
    for kernel in (binning._epsilon_kernel, binning._log_masses, mcse._geyer_tau):
        path = Path(kernel._cache._cache_path).resolve()
        assert not path.is_relative_to(jit.PACKAGE_DIR), path
        assert str(path) == str(Path(jit.cache_dir()).resolve())
    jit.install()  # idempotent
    classes = numba.core.caching.CacheImpl._locator_classes
    assert sum(c is jit._PackageCacheLocator for c in classes) == 1


@pytest.mark.slow
@pytest.mark.both_stacks
def test_other_code_keeps_numba_s_own_locator(tmp_path):
    """Only this package's files are redirected: a user's cached function stays in-tree."""
    (tmp_path / "mine.py").write_text(
        textwrap.dedent(
            """
            import numba

            @numba.njit(cache=True)
            def twice(x):
                return 2 * x
            """
        )
    )
    code = "import pymc_edp.base, mine; print(mine.twice(3)); print(mine.twice._cache._cache_path)"
    out = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, check=True
    ).stdout.split()
    assert out[0] == "6" and Path(out[1]).resolve() == (tmp_path / "__pycache__").resolve()


@pytest.mark.slow
@pytest.mark.both_stacks
def test_a_users_numba_cache_dir_wins(tmp_path):
    code = "from pymc_edp.base import binning; print(binning._epsilon_kernel._cache._cache_path)"
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path)}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    ).stdout.strip()
    assert Path(out).resolve().is_relative_to(tmp_path.resolve())
