"""A fixture DAG in a temporary git + DVC repository, and a Prefect test server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

import flows  # noqa: F401  (the project's Prefect settings, before Prefect loads)

HERE = Path(__file__).resolve().parent
BIN = Path(sys.executable).parent

# Two papers behind one shared asset stage, a foreach stage, and a ledger over both reports.
FIXTURE_DVC = {
    "stages": {
        "assets-base": {"cmd": "python step.py assets-base assets data/base.txt",
                        "deps": ["step.py"], "outs": ["data/base.txt"]},
        "alpha-data": {"cmd": "python step.py alpha-data alpha data/alpha/data.txt",
                       "deps": ["step.py", "data/base.txt"], "params": ["alpha.n"],
                       "outs": ["data/alpha/data.txt"]},
        "alpha-report": {"cmd": "python step.py alpha-report alpha reports/alpha/claim.json reports/alpha/metrics.json",
                         "deps": ["step.py", "data/alpha/data.txt"], "params": ["alpha.n"],
                         "outs": [{"reports/alpha/claim.json": {"cache": False}}],
                         "metrics": [{"reports/alpha/metrics.json": {"cache": False}}]},
        "beta-data": {"cmd": "python step.py beta-data beta data/beta/data.txt",
                      "deps": ["step.py", "data/base.txt"], "params": ["beta.n", "beta.fail"],
                      "outs": ["data/beta/data.txt"]},
        "beta-train": {"foreach": [1, 2],
                       "do": {"cmd": "python step.py beta-train beta data/beta/train_${item}.txt",
                              "deps": ["step.py", "data/beta/data.txt"], "params": ["beta.n"],
                              "outs": ["data/beta/train_${item}.txt"]}},
        "beta-report": {"cmd": "python step.py beta-report beta reports/beta/claim.json reports/beta/metrics.json",
                        "deps": ["step.py", "data/beta/train_1.txt", "data/beta/train_2.txt"],
                        "params": ["beta.n"],
                        "outs": [{"reports/beta/claim.json": {"cache": False}}],
                        "metrics": [{"reports/beta/metrics.json": {"cache": False}}]},
        "claims": {"cmd": "python step.py claims ledger reports/index.md",
                   "deps": ["step.py", "reports/alpha/claim.json", "reports/beta/claim.json"],
                   "outs": [{"reports/index.md": {"cache": False}}]},
    }
}
FIXTURE_STAGES = {"assets-base", "alpha-data", "alpha-report", "beta-data", "beta-train@1", "beta-train@2",
                  "beta-report", "claims"}
FIXTURE_PARAMS = {"profile": "smoke", "alpha": {"n": 1, "sleep": 1}, "beta": {"n": 1, "sleep": 1, "fail": False}}


def run(args: list[str], cwd: Path, check: bool = True,
        extra_env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    """Run a command with the venv's bin first on PATH; assert success unless ``check`` is False."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}", **(extra_env or {})}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=600)
    if check:
        assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-3000:]}\n{proc.stderr[-3000:]}"
    return proc


def git(repo: Path, *args: str) -> None:
    """A git command with a fixed identity."""
    run(["git", "-c", "user.email=t@t", "-c", "user.name=t", *args], repo)


def set_params(repo: Path, **sections: dict) -> None:
    """Update sections of the fixture repo's params.yaml."""
    params = yaml.safe_load((repo / "params.yaml").read_text())
    for name, values in sections.items():
        params[name].update(values)
    (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))


def make_fixture_repo(dest: Path) -> Path:
    """A committed git + DVC repository holding the fixture DAG."""
    dest.mkdir(parents=True, exist_ok=True)
    shutil.copy2(HERE / "fixture_step.py", dest / "step.py")
    (dest / "dvc.yaml").write_text(yaml.safe_dump(FIXTURE_DVC, sort_keys=False))
    (dest / "params.yaml").write_text(yaml.safe_dump(FIXTURE_PARAMS, sort_keys=False))
    run(["git", "init", "-q", "-b", "main"], dest)
    run([str(BIN / "dvc"), "init", "-q"], dest)
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "fixture")
    return dest


def stale(repo: Path) -> set[str]:
    """Stage names that ``dvc status`` reports as changed."""
    out = run([str(BIN / "dvc"), "status", "--json"], repo).stdout
    return set(yaml.safe_load(out or "{}") or {})


@pytest.fixture
def fixture_repo(tmp_path: Path) -> Path:
    """A fresh fixture repository."""
    return make_fixture_repo(tmp_path / "repo")


@pytest.fixture(scope="session")
def prefect_server(tmp_path_factory):
    """A temporary Prefect server on loopback with its own database, for the whole session.

    Its start-up timeout is the project's (prefect.toml, applied by ``import flows``).
    """
    from prefect.settings import get_current_settings
    from prefect.testing.utilities import prefect_test_harness

    with prefect_test_harness(server_startup_timeout=get_current_settings().server.ephemeral.startup_timeout_seconds):
        yield
