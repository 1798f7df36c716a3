"""Import guards for the optional and fragile parts of the scientific stack."""

from __future__ import annotations

ARVIZ_TRAP_HELP = (
    "`import arviz` failed ({err}). This is the known clash between ArviZ 0.23, which "
    "imports the `arviz-plots` package when it is installed (bambi pulls it in, for "
    "example), and matplotlib >= 3.11, where arviz-plots' start-up code fails. Fix it with "
    "ONE of:\n"
    '    pip install "matplotlib<3.11"      # keeps arviz-plots; the fix for bambi users\n'
    "    pip uninstall arviz-plots          # only if nothing you use needs it (bambi does)\n"
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
