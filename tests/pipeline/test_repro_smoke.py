"""End to end through DVC at the smoke profile, in a temporary copy of the repository."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent


def _run(args: list[str], cwd: Path, check: bool = True) -> subprocess.CompletedProcess:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=1200)
    if check:
        assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


@pytest.fixture(scope="module")
def repo_copy(tmp_path_factory) -> Path:
    dest = tmp_path_factory.mktemp("repo")
    files = _run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], ROOT).stdout.split()
    for rel in files:
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("reports/", "dvc.lock")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["profile"] = "smoke"
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _run(["git", "init", "-q"], dest)
    _run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "add", "-A"], dest)
    _run(["git", "-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", "copy"], dest)
    _run([sys.executable, "-m", "dvc", "repro"], dest)
    return dest


def _write_edited_params(repo: Path, dest: Path, dotted: str, value: object) -> None:
    """Write the copy's params.yaml to ``dest`` with one dotted key changed."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    *parents, last = dotted.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[last] = value
    dest.write_text(yaml.safe_dump(params, sort_keys=False))


def _stale(repo: Path) -> set[str]:
    return set(json.loads(_run([sys.executable, "-m", "dvc", "status", "--json"], repo).stdout or "{}"))


@pytest.mark.slow
def test_smoke_repro_writes_reports_and_ledger(repo_copy):
    claim = json.loads((repo_copy / "reports/matrix_denoising/claim.json").read_text())
    assert claim["profile"] == "smoke" and claim["verdict"] in {"reproduced", "partly", "not_reproduced",
                                                                "inconclusive"}
    index = (repo_copy / "reports/index.md").read_text()
    assert "[matrix_denoising](matrix_denoising/report.md)" in index and claim["verdict"] in index
    assert "<table>" in (repo_copy / "reports/index.html").read_text()
    assert _stale(repo_copy) == set()
    shown = _run([sys.executable, "-m", "dvc", "metrics", "show", "--json"], repo_copy).stdout
    assert "max_trajectory_gap" in shown


@pytest.mark.slow
def test_changing_one_param_reruns_only_its_downstream_stages(repo_copy):
    _write_edited_params(repo_copy, repo_copy / "params.yaml", "matrix_denoising.evaluate.stall_fraction", 0.4)
    assert _stale(repo_copy) == {"matrix_denoising-evaluate"}  # dvc status lists the directly changed stage
    out = _run([sys.executable, "-m", "dvc", "repro"], repo_copy).stdout
    assert "Stage 'matrix_denoising-data' didn't change, skipping" in out
    assert "Stage 'matrix_denoising-train' didn't change, skipping" in out
    assert "Running stage 'matrix_denoising-evaluate'" in out
    assert "Running stage 'matrix_denoising-report'" in out
    assert _stale(repo_copy) == set()
    diff = _run([sys.executable, "-m", "dvc", "params", "diff", "--json"], repo_copy).stdout
    assert "stall_fraction" in diff


@pytest.mark.slow
def test_cli_refuses_bad_params_naming_the_key(repo_copy):
    bad = repo_copy / "bad_params.yaml"
    _write_edited_params(repo_copy, bad, "matrix_denoising.train.horizon", -1)
    proc = _run([sys.executable, "-m", "stages.matrix_denoising.train", "--params", str(bad),
                 "--instances", "data/matrix_denoising/instances.parquet",
                 "--trajectories", "t.parquet", "--timing", "t.json"], repo_copy, check=False)
    assert proc.returncode == 2
    assert "matrix_denoising.train.horizon" in proc.stderr
    assert not (repo_copy / "t.parquet").exists()
