"""Import guards for the optional and fragile parts of the scientific stack."""

from __future__ import annotations

ARVIZ_TRAP_HELP = (
    "`import arviz` failed inside matplotlib ({err}). This is the known clash between "
    "ArviZ 0.23, the `arviz-plots` package (pulled in by bambi, for example) and "
    "matplotlib >= 3.11. Fix it with ONE of:\n"
    "    pip uninstall arviz-plots          # if you do not need it\n"
    '    pip install "matplotlib<3.11"      # keep arviz-plots\n'
    "See the troubleshooting section of the pymc_edp README."
)


def import_arviz():
    """Import ArviZ, turning the arviz-plots/matplotlib clash into an actionable error.

    Returns
    -------
    module
        The ``arviz`` module.
    """
    try:
        import arviz
    except AttributeError as err:  # pragma: no cover - depends on the installed stack
        if "matplotlib" in str(err) or "style" in str(err):
            raise ImportError(ARVIZ_TRAP_HELP.format(err=err)) from err
        raise
    return arviz
