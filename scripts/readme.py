"""Print what the README tells a newcomer to run, so that CI runs exactly that.

Usage::

    python scripts/readme.py setup      # the set-up commands, one per line, in order
    python scripts/readme.py quickstart # the quick start's Python code

The set-up commands are the ``bash`` blocks of the section "Set-up" (one command each); the
quick start is the first ``python`` block of the section "Quick start". ``.ci/run`` runs the
commands one after the other in one fresh virtual environment, then the quick start from a
folder outside the checkout.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

README = Path(__file__).resolve().parents[1] / "README.md"


def section(text: str, title: str) -> str:
    """The text of the level-2 section whose heading starts with ``title``."""
    match = re.search(rf"^## {re.escape(title)}.*?$(.*?)(?=^## |\Z)", text, re.M | re.S)
    if match is None:
        raise SystemExit(f"README.md has no section '## {title}'")
    return match.group(1)


def blocks(text: str, language: str) -> list[str]:
    """The fenced code blocks of ``language`` in ``text``, in order."""
    return [b.strip("\n") for b in re.findall(rf"^```{language}\n(.*?)^```", text, re.M | re.S)]


def setup_commands(text: str) -> list[str]:
    """The set-up commands, in the README's order."""
    out = blocks(section(text, "Set-up"), "bash")
    if not out or any("\n" in c for c in out):
        raise SystemExit("README.md's Set-up must hold one-line bash commands")
    return out


def quickstart(text: str) -> str:
    """The quick start's Python code."""
    code = blocks(section(text, "Quick start"), "python")
    if not code:
        raise SystemExit("README.md's Quick start has no python block")
    return code[0]


def main(argv: list[str]) -> int:
    """Print the set-up commands or the quick start; 2 for any other argument."""
    text = README.read_text()
    if argv == ["setup"]:
        print("\n".join(setup_commands(text)))
    elif argv == ["quickstart"]:
        print(quickstart(text))
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
