import re

import numpy as np
import pytest

from pymc_edp import cli
from pymc_edp.datasets import heart_transplant_model, load_heart_transplant
from pymc_edp.model.compat import from_dict
from pymc_edp.results.edp import EDPResult

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
DEMO_OPTIONS = (
    "--bins",
    "--draws",
    "--tune",
    "--chains",
    "--seed",
    "--method",
    "--sampler",
    "--top",
    "--output",
    "--no-plot",
    "--no-progress",
)


def _top_rows(out: str, k: int) -> list[list[str]]:
    """The k data rows of the "most exposed patients" table."""
    lines = out.splitlines()
    (start,) = [i for i, line in enumerate(lines) if "most exposed patients" in line]
    header = lines[start + 1].split()
    assert header[:7] == [
        "patient",
        "epsilon",
        "pareto_k",
        "worst_parameter",
        "age",
        "survival_days",
        "censored",
    ]
    return [lines[start + 2 + j].split() for j in range(k)]


def _check_top_rows(rows, res: EDPResult) -> None:
    df = load_heart_transplant().set_index("patient")
    eps = res.pointwise["epsilon"]
    expected_ids = eps["neighbour"].values[np.argsort(-eps.values, kind="stable")[: len(rows)]]
    assert [int(r[0]) for r in rows] == [int(i) for i in expected_ids]
    for row in rows:
        pid = int(row[0])
        assert float(row[1]) == pytest.approx(float(eps.sel(neighbour=pid)), abs=5e-4)
        k = float(res.pointwise["pareto_k"].sel(neighbour=pid))
        assert float(row[2]) == pytest.approx(k, abs=5e-4)
        assert row[3] in ("intercept", "beta_age", "alpha")
        assert float(row[4]) == pytest.approx(df.loc[pid, "age"])
        assert int(row[5]) == df.loc[pid, "survival"]
        assert row[6] == ("yes" if df.loc[pid, "censored"] == 1 else "no")


def _check_reading(out: str, res: EDPResult) -> None:
    match = re.search(
        r"Reading: removing patient (\d+) \(age [\d.]+, (died after|censored at) \d+ days\) "
        r".* bins of (\w+) by a factor of up to e\^([\d.]+) = ([\d.]+) "
        r"\(90% Monte-Carlo interval of epsilon: \[([\d.]+), ([\d.]+)\]\)\.",
        out,
    )
    assert match, out
    assert int(match[1]) == res.worst_neighbour
    assert match[3] == str(
        res.pointwise["worst_parameter"].sel(neighbour=res.worst_neighbour).values
    )
    assert float(match[4]) == pytest.approx(res.epsilon, abs=5e-4)
    assert float(match[6]) <= float(match[4]) <= float(match[7])


# ---------------------------------------------------------------- parser, no sampling
def test_help_documents_every_option(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["demo", "--help"])
    assert exc.value.code == 0
    out = capsys.readouterr().out
    for option in DEMO_OPTIONS:
        assert option in out
    assert "heart_transplant_edp.nc" in out and "heart_transplant_epsilon.png" in out
    assert "(default: 20)" in out  # --bins


def test_top_level_help_and_version(capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(["--help"])
    assert exc.value.code == 0
    assert "demo" in capsys.readouterr().out
    with pytest.raises(SystemExit) as exc:
        cli.main(["--version"])
    assert exc.value.code == 0
    assert re.search(r"pymc-edp \d+\.\d+", capsys.readouterr().out)


def test_no_command_prints_usage(capsys):
    assert cli.main([]) == 2
    assert "usage: pymc-edp" in capsys.readouterr().err


@pytest.mark.parametrize(
    "argv",
    [
        ["demo", "--bins", "0"],
        ["demo", "--draws", "ten"],
        ["demo", "--method", "exact"],
        ["demo", "--neighbour", "replace"],
        ["demo", "--seed", "1.5"],
    ],
)
def test_bad_arguments_exit_2(argv, capsys):
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert "error" in capsys.readouterr().err


# ----------------------------------------------- demo with a stand-in fit (no MCMC)
@pytest.fixture(scope="module")
def quick_fit():
    """The demo model with posterior-like draws (normal approximation), no sampling."""
    import pymc as pm

    rng = np.random.default_rng(7)
    model = heart_transplant_model()
    shape = (2, 300)
    posterior = {
        "intercept": rng.normal(0.55, 0.28, shape),
        "beta_age": rng.normal(-0.84, 0.32, shape),
        "alpha": np.exp(rng.normal(-0.56, 0.125, shape)),
    }
    idata = from_dict({"posterior": posterior})
    pm.compute_log_likelihood(idata, model=model, progressbar=False)
    return model, idata


@pytest.fixture
def stub_fit(quick_fit, monkeypatch):
    calls = []

    def fake_fit(df=None, **kwargs):
        calls.append(kwargs)
        return quick_fit[0], quick_fit[1], "nutpie"

    monkeypatch.setattr(cli, "fit_demo_model", fake_fit)
    return calls


def test_demo_flow_with_stub_fit(stub_fit, tmp_path, capsys):
    out_dir = tmp_path / "new" / "dir"
    argv = ["demo", "--method", "psis", "--no-progress", "--output", str(out_dir)]
    argv += ["--draws", "300", "--seed", "3", "--bins", "10", "--top", "3"]
    assert cli.main(argv) == 0
    (kwargs,) = stub_fit
    assert kwargs == {
        "draws": 300,
        "tune": None,
        "chains": 2,
        "random_seed": 3,
        "sampler": "auto",
        "progressbar": False,
    }
    out = capsys.readouterr().out
    assert "69 patients (45 deaths, 24 censored)" in out
    assert "Empirical DP audit (B-EDP, B = 10, psis)" in out
    res = EDPResult.from_netcdf(out_dir / cli.RESULT_FILENAME)
    assert res.bins == 10 and res.n_neighbours == 69
    assert f"epsilon = {res.epsilon:.3f}" in out
    assert "The 3 most exposed patients" in out
    assert "Verification: unverified: method='psis' reweights only" in out
    _check_reading(out, res)
    _check_top_rows(_top_rows(out, 3), res)
    assert (out_dir / cli.FIGURE_FILENAME).read_bytes()[:8] == PNG_MAGIC
    assert str((out_dir / cli.FIGURE_FILENAME).resolve()) in out


def test_demo_no_plot(stub_fit, tmp_path, capsys):
    argv = ["demo", "--method", "psis", "--no-plot", "--no-progress", "--output", str(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert (tmp_path / cli.RESULT_FILENAME).is_file()
    assert not (tmp_path / cli.FIGURE_FILENAME).exists()
    assert "figure" not in out.split("Wrote:")[1]


def test_demo_without_matplotlib(stub_fit, tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(cli, "_matplotlib_available", lambda: False)
    argv = ["demo", "--method", "psis", "--no-progress", "--output", str(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out
    assert "matplotlib is not installed" in out and "pymc-edp[plots]" in out
    assert not (tmp_path / cli.FIGURE_FILENAME).exists()


# ---------------------------------------------------------------- end to end
@pytest.mark.slow
def test_demo_end_to_end(tmp_path, capsys):
    argv = ["demo", "--draws", "200", "--no-progress", "--output", str(tmp_path)]
    assert cli.main(argv) == 0
    out = capsys.readouterr().out

    assert re.search(r"Sampled with (nutpie|pymc): 2 chains x 200 draws \(200 tuning\)", out)
    # the header says what happened: "auto" when some patients were refitted, else "psis"
    assert re.search(r"Empirical DP audit \(B-EDP, B = 20, (auto|psis)\)", out)
    assert "69 neighbours (record removed), 400 posterior draws" in out
    for name in ("intercept", "beta_age", "alpha"):
        assert re.search(rf"^{name}\s+\d+\.\d{{3}}\s+\d+", out, flags=re.MULTILINE)
    assert "Pareto k diagnostic values:" in out

    res = EDPResult.from_netcdf(tmp_path / cli.RESULT_FILENAME)
    refitted = (res.pointwise["method"] == "refit").any()
    assert res.method == ("auto" if refitted else "psis")
    assert f"B = 20, {res.method})" in out
    assert res.n_neighbours == 69
    np.testing.assert_array_equal(res.pointwise["neighbour"].values, np.arange(1, 70))
    assert f"epsilon = {res.epsilon:.3f}" in out
    assert 0 < res.epsilon < 10
    assert "The 5 most exposed patients" in out
    _check_reading(out, res)
    _check_top_rows(_top_rows(out, 5), res)
    # the headline is confirmed by refitting the 5 worst patients, and no caution
    # contradicts its interval (which is clear of zero)
    assert re.search(r"Verification: (confirmed|corrected) by refit", out)
    assert res.verification in ("confirmed", "corrected")
    assert (res.pointwise["verification"].values > 0).sum() >= 5
    assert res.mc_interval90[0] > 0 and "Caution" not in out and "EMI" not in out

    png = tmp_path / cli.FIGURE_FILENAME
    assert png.read_bytes()[:8] == PNG_MAGIC
    assert png.stat().st_size > 10_000
    assert "Wrote:" in out and str(png.resolve()) in out


def test_fit_demo_model_rejects_unknown_sampler():
    with pytest.raises(ValueError, match="sampler"):
        cli.fit_demo_model(sampler="stan")


@pytest.mark.slow
def test_fit_demo_model_with_pymc_sampler():
    _, idata, sampler = cli.fit_demo_model(
        draws=100, tune=100, chains=2, random_seed=1, sampler="pymc", progressbar=False
    )
    assert sampler == "pymc"
    ll = idata.log_likelihood["survival"]
    assert dict(ll.sizes) == {"chain": 2, "draw": 100, "patient": 69}
    np.testing.assert_array_equal(ll["patient"].values, np.arange(1, 70))
    assert np.isfinite(ll.values).all()
    assert -2.0 < float(idata.posterior["beta_age"].mean()) < 0.0


def test_demo_writes_into_its_own_folder_by_default(stub_fit, tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    argv = ["demo", "--method", "psis", "--no-plot", "--no-progress", "--draws", "300"]
    assert cli.main(argv) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == [cli.DEFAULT_OUTPUT]
    assert (tmp_path / cli.DEFAULT_OUTPUT / cli.RESULT_FILENAME).is_file()
    out = capsys.readouterr().out
    assert "90% Monte-Carlo interval of epsilon: [" in out


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["demo", "--bins", "1"], "B must be at least 2"),
        (["demo", "--draws", "20"], "gives 40 posterior draws; B = 20 bins need at least 200"),
        (["demo", "--draws", "30", "--chains", "1", "--bins", "5"], "use --draws 50 or more"),
        # issue 32: a negative seed sampled first, then died in a PyMC traceback
        (["demo", "--seed", "-1"], "a seed must be an integer from 0 to 4294967295"),
        (["demo", "--seed", str(2**32)], "a seed must be an integer from 0 to 4294967295"),
    ],
)
def test_demo_checks_its_options_before_sampling(argv, message, stub_fit, capsys):
    """Issue 21: --bins 1 and --draws 20 sampled first, then died with a traceback."""
    with pytest.raises(SystemExit) as exc:
        cli.main(argv)
    assert exc.value.code == 2
    assert message in capsys.readouterr().err
    assert stub_fit == []  # nothing was fitted


def test_demo_checks_its_output_folder_before_sampling(stub_fit, tmp_path, capsys):
    """A file, or a folder that cannot be written, is refused before any work."""
    a_file = tmp_path / "results.txt"
    a_file.write_text("not a folder")
    read_only = tmp_path / "locked"
    read_only.mkdir()
    read_only.chmod(0o500)
    cases = [
        (a_file, "is a file, not a folder"),
        (a_file / "below", "is a file, not a folder"),
    ]
    for folder, message in cases:
        with pytest.raises(SystemExit) as exc:
            cli.main(["demo", "--output", str(folder), "--no-progress"])
        assert exc.value.code == 2
        assert message in capsys.readouterr().err
    # a read-only folder (root writes anywhere, so the refusal is staged)
    import tempfile

    def refuse(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(tempfile, "TemporaryFile", refuse)
        with pytest.raises(SystemExit) as exc:
            cli.main(["demo", "--output", str(read_only / "out"), "--no-progress"])
    assert exc.value.code == 2
    assert f"cannot write into {read_only} (Permission denied)" in capsys.readouterr().err
    assert stub_fit == []
    read_only.chmod(0o700)


def test_demo_keeps_the_result_when_writing_fails(stub_fit, tmp_path, capsys, monkeypatch):
    """A write that fails after the audit (a full disk) saves the result elsewhere."""
    original = EDPResult.to_netcdf
    calls = {"n": 0}

    def full_disk_once(self, path, **kwargs):
        calls["n"] += 1
        if calls["n"] == 1:
            raise OSError(28, "No space left on device")
        return original(self, path, **kwargs)

    monkeypatch.setattr(EDPResult, "to_netcdf", full_disk_once)
    argv = ["demo", "--method", "psis", "--no-progress", "--no-plot", "--output", str(tmp_path)]
    assert cli.main(argv) == 1
    out = capsys.readouterr().out
    saved = out.split("the result is saved as ")[1].strip()
    assert "No space left on device" in out
    assert EDPResult.from_netcdf(saved).n_neighbours == 69
