"""The benchmarks' epsilons with the working tree and with a base revision, bit for bit.

A restructure must not change a number. This runs, with the package of a base revision and
with the working tree (each in a fresh interpreter that imports only that tree), the audits
the benchmarks run, with their seeds:

- the headline audit of ``bench_audit_vs_loo.py`` / ``bench_revisions.py`` (PSIS, B = 20,
  4 chains x 1,000 draws, 10,000 records);
- zoo models of ``bench_audit_cost.py`` (``tests/zoo.py``; :data:`MODELS`, one of each
  idiom, by default): a PSIS audit of all its variables, and for :data:`AUTO` the default audit
  (``method="auto"``: moment matching, refits, verification) with ``random_seed=1``;
- a release audit of the posterior draws (``release="draws"``) of the :data:`RELEASE` models.

Each audit gives its epsilon (as a hexadecimal float) and a hash of every neighbour's
epsilon; the report lists each case with ``same`` or what differs, and the exit status is 1
when any differs. The base revision's package is exported with ``git archive``.

Usage::

    python benchmarks/bench_epsilons.py --base 2fad31f --cache base.json  # keeps the base's
    python benchmarks/bench_epsilons.py --base HEAD~1 --models glm_normal,coal_mining
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
from pathlib import Path

from bench_revisions import export, run_in_tree

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
AUTO = ("glm_normal", "glm_logistic", "hier_centred", "mixture", "coal_mining", "censored")
RELEASE = ("glm_normal", "glm_poisson", "hier_noncentred", "ordinal")
#: The models run by default: every idiom of the zoo once (``--models`` names others).
MODELS = (
    *AUTO,
    "glm_poisson",
    "hier_noncentred",
    "ordinal",
    "glm_studentt",
    "mvnormal_lkj",
    "missing_values",
    "two_observed",
    "potential",
    "ar_series",
    "glm_logistic_observed_data",
)

CHILD = r"""
import hashlib, json, logging, sys, warnings
sys.path[:0] = [{bench!r}, {tests!r}]
import numpy as np
import pymc_edp as edp
assert edp.__file__.startswith({tree!r}), edp.__file__
warnings.simplefilter("ignore")
for name in ("pymc", "pymc_edp", "pytensor", "nutpie"):
    logging.getLogger(name).setLevel(logging.ERROR)

def numbers(run):
    try:
        res = run()
    except Exception as err:  # the same refusal in both trees is the same behaviour
        return {{"error": type(err).__name__}}
    ds = getattr(res, "pointwise", None)
    eps = res.epsilon() if callable(res.epsilon) else res.epsilon
    out = {{"epsilon": float(eps).hex()}}
    if ds is not None:
        eps = np.ascontiguousarray(ds["epsilon"].values, dtype=float)
        out["pointwise"] = hashlib.sha256(eps.tobytes()).hexdigest()[:16]
    return out

name, todo = {name!r}, {todo!r}
out = {{}}
if "headline" in todo:
    from bench_audit_vs_loo import make_idata
    run = lambda: edp.audit(make_idata(), method="psis", bins=20, progressbar=False)
    out["headline"] = numbers(run)
else:
    import zoo
    model, idata = zoo.ALL[name]()
    kw = dict(random_seed=1, progressbar=False)
    if "psis" in todo:
        out["psis"] = numbers(lambda: edp.audit(idata, model, method="psis", **kw))
    if "auto" in todo:
        out["auto"] = numbers(lambda: edp.audit(idata, model, **kw))
    if "release" in todo:
        run = lambda: edp.audit_release(idata, model, release="draws", **kw)
        out["release"] = numbers(run)
print(json.dumps(out))
"""


def run(tree: Path, name: str, todo: list[str]) -> dict:
    """``{case: numbers}`` of one model's cases with the package in ``tree``, in a fresh
    interpreter (one fit for all of them)."""
    code = CHILD.format(
        bench=str(HERE), tests=str(REPO / "tests"), tree=str(tree), name=name, todo=todo
    )
    res = run_in_tree(code, tree)
    if res.returncode:
        crash = {"crash": res.stderr.strip().splitlines()[-1][:120]}
        return dict.fromkeys(todo, crash)
    return json.loads(res.stdout.strip().splitlines()[-1])


def cases(models: list[str]) -> dict[str, list[str]]:
    """``{model: its cases}``: the headline, then each model's PSIS / auto / release audits."""
    out = {"": ["headline"]}
    for name in models:
        out[name] = ["psis", *(["auto"] if name in AUTO else [])]
        out[name] += ["release"] if name in RELEASE else []
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--base", required=True, help="git revision to compare with")
    parser.add_argument("--models", default=None, help="comma-separated zoo builders")
    parser.add_argument(
        "--cache", default=None, help="JSON file keeping the base revision's numbers"
    )
    parser.add_argument(
        "--base-only", action="store_true", help="only compute (and cache) the base's numbers"
    )
    args = parser.parse_args()
    models = args.models.split(",") if args.models else list(MODELS)
    cache = Path(args.cache) if args.cache else None
    kept = json.loads(cache.read_text()) if cache and cache.is_file() else {}
    kept = kept.get(args.base, {})
    differ = total = 0
    with tempfile.TemporaryDirectory() as tmp:
        base = export(args.base, Path(tmp))
        for name, todo in cases(models).items():
            missing = [case for case in todo if f"{case} {name}" not in kept]
            if missing:
                for case, numbers in run(base, name, missing).items():
                    kept[f"{case} {name}"] = numbers
                if cache:
                    cache.write_text(json.dumps({args.base: kept}, indent=1))
            if args.base_only:
                continue
            after = run(REPO, name, todo)
            for case in todo:
                before, now = kept[f"{case} {name}"], after[case]
                total += 1
                differ += before != now
                verdict = "same" if before == now else f"DIFFERS: {before} -> {now}"
                print(f"{case:9s} {name:28s} {now.get('epsilon', now)}  {verdict}", flush=True)
    print(f"{differ} of {total} cases differ from {args.base}")
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
