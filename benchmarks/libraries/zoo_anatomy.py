"""Graph anatomy of the zoo's hand-written library models (``tests/zoo_libraries.py``).

Runs in either project stack (no third-party library needed)::

    python benchmarks/libraries/zoo_anatomy.py /tmp/anatomy
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent.parent / "tests"))

import zoo_libraries as zl  # noqa: E402
from libcommon import anatomy  # noqa: E402


def main(argv=None):
    args = sys.argv[1:] if argv is None else argv
    out = Path(args[0]) if args else None
    models = {
        "local_level_kalman": zl.local_level_model(zl.nile()),
        "local_level_kalman_fixed": zl.local_level_model(zl.nile(), 0.4, 1.2),
        "gamma_gamma_potential": zl.gamma_gamma_model(),
        "bgnbd_customdist": zl.bgnbd_model(),
    }
    for name, model in models.items():
        path = None if out is None else out / f"zoo_{name}.txt"
        print(anatomy(model, f"tests/zoo_libraries.py: {name}", path))


if __name__ == "__main__":
    main()
