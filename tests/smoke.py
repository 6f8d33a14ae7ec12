"""One smoke-profile run of the whole DAG per test session, shared by every test that needs outputs.

``smoke_repo`` copies the repository (the files git tracks or would track, without
``reports/`` and ``dvc.lock``) into a temporary folder, sets ``profile: smoke``, and runs
the DAG there once (``stages/repro.py``: DVC's stages, one per CPU at once). Paper step tests
read its outputs through the same tables the DAG is generated from (no hand-wired paths), and
call a step's ``run`` directly when they need a corrupted input or a changed param (writing
only under their own ``tmp_path``). Tests must not change the shared copy (two pytest-xdist
workers read it at once): a test that reruns DVC works on a hard-linked copy of it.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
import yaml

from stages.core.config import load_global
from stages.core.stage import Step, run_stage
from stages.dag import find_step, step_paths

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def run_cmd(args: list[str], cwd: Path, check: bool = True, timeout: int = 3600) -> subprocess.CompletedProcess:
    """Run a command with the project's interpreter first on PATH; on failure show its output."""
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    proc = subprocess.run(args, cwd=cwd, capture_output=True, text=True, env=env, timeout=timeout)
    if check:
        assert proc.returncode == 0, f"{args} failed:\n{proc.stdout[-4000:]}\n{proc.stderr[-4000:]}"
    return proc


@functools.cache
def network_free_prefix() -> tuple[str, ...]:
    """A command prefix that runs its command in a new network namespace with no interfaces up
    (``unshare -n``, or ``-rn`` for a user without the privilege); empty where neither works."""
    for prefix in (("unshare", "-n"), ("unshare", "-rn")):
        try:
            if subprocess.run([*prefix, "true"], capture_output=True, timeout=30).returncode == 0:
                return prefix
        except (OSError, subprocess.TimeoutExpired):
            continue
    return ()


def smoke_jobs() -> int:
    """Stages the smoke DAG runs at once: one per CPU, each stage at one thread."""
    return max(1, os.cpu_count() or 1)


def repro_command(*targets: str, no_run_cache: bool = False) -> list[str]:
    """``dvc repro`` of ``targets`` (all if none) with a stage per CPU at once (stages/repro.py)."""
    return [*network_free_prefix(), sys.executable, "-m", "stages.repro", "--jobs", str(smoke_jobs()),
            *(["--no-run-cache"] if no_run_cache else []), *targets]


def copy_repo(dest: Path, profile: str = "smoke") -> Path:
    """A git repository at ``dest`` holding this checkout's sources at ``profile`` (no results), each
    stage at one thread (stages run side by side, one per CPU)."""
    files = run_cmd(["git", "ls-files", "--cached", "--others", "--exclude-standard"], ROOT).stdout.split()
    for rel in files:
        src = ROOT / rel
        if src.is_file() and not rel.startswith(("reports/", "dvc.lock")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["profile"] = profile
    params["threads"] = 1
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False, allow_unicode=True))
    git = ["git", "-c", "user.email=t@t", "-c", "user.name=t"]
    run_cmd(["git", "init", "-q"], dest)
    run_cmd([*git, "add", "-A"], dest)
    run_cmd([*git, "commit", "-qm", "copy"], dest)
    return dest


@dataclasses.dataclass(frozen=True)
class SmokeRepo:
    """The shared smoke workspace and ways to reach its outputs."""

    root: Path
    network_free: bool = False  # the DAG ran in a network namespace with no interfaces (unshare -n)
    seconds: float | None = None  # wall time of the shared run (None: a reused workspace)
    stage_times: dict[str, Any] | None = None  # each stage's wall and CPU seconds in that run

    @property
    def params(self) -> Path:
        return self.root / "params.yaml"

    def step(self, stage: str) -> Step:
        """The Step behind a stage name (e.g. ``matrix_denoising-train``)."""
        return find_step(stage, self.params)

    def paths(self, stage: str, **overrides: Path) -> Any:
        """The stage's ``Paths`` inside the workspace; ``overrides`` replace some (e.g. a corrupt copy)."""
        return step_paths(self.step(stage), self.root, **overrides)

    def config(self, stage: str, params: Path | None = None) -> Any:
        """The stage's config at the smoke profile (or from another params file)."""
        return self.step(stage).load_config(params or self.params)

    def run(self, stage: str, params: Path | None = None, **overrides: Path) -> dict[str, Any]:
        """Run one step in-process on the workspace's inputs; outputs should be overridden to tmp paths."""
        entry = self.step(stage)
        params = params or self.params
        return run_stage(entry.paper, entry.step, entry.run, entry.load_config(params),
                         self.paths(stage, **overrides), params, None)

    def json(self, rel: str) -> Any:
        return json.loads((self.root / rel).read_text())


def report_outs(folder: Path) -> dict[str, Path]:
    """A report step's outputs redirected under ``folder``, so a test never writes the shared workspace."""
    return {"report": folder / "r.md", "metrics": folder / "m.json", "claim": folder / "c.json",
            "plots": folder / "plots"}


def repro_targets(session: pytest.Session) -> list[str]:
    """What the session's tests need: every paper's report when only paper folders are collected
    (``pytest tests/espo`` runs espo's stages alone), else the whole DAG (an empty list)."""
    papers = set(load_global(ROOT / "params.yaml").papers)
    folders = set()
    for item in session.items:
        parts = Path(str(item.path)).resolve().relative_to(ROOT / "tests").parts
        folders.add(parts[0] if len(parts) > 1 else "")
    if folders and folders <= papers | {"core", "assets"}:
        return sorted(f"{p}-report" for p in folders & papers)
    return []


def session_shared_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A folder every process of this test session sees: the session's base temporary folder, or under
    pytest-xdist (``-n 2`` in pyproject.toml) its parent, which the workers share."""
    base = tmp_path_factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def _build_smoke_repo(tmp_path_factory: pytest.TempPathFactory, targets: list[str]) -> dict[str, Any]:
    """Run the smoke DAG once in a fresh copy of the repository; return where it is and what it cost."""
    root = copy_repo(tmp_path_factory.mktemp("smoke_repo"))
    times = tmp_path_factory.mktemp("smoke_times") / "times.json"
    start = time.perf_counter()
    run_cmd([*repro_command(*targets), "--times", str(times)], root)
    return {"root": str(root), "network_free": bool(network_free_prefix()),
            "seconds": round(time.perf_counter() - start, 1),
            "stage_times": json.loads(times.read_text())["stages"]}


@pytest.fixture(scope="session")
def smoke_repo(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> SmokeRepo:
    """The DAG at the smoke profile (the part the session's tests need), run once per session,
    without network where the machine allows it (so every test also proves the DAG is offline).

    Under pytest-xdist the first worker that asks runs it while the others wait on a file lock, then
    all read the same workspace (a failed run is recorded too, so no worker runs it again). Its wall
    time and each stage's wall and CPU seconds go into the JUnit XML as properties of
    ``test_smoke_repro_writes_every_report_and_the_ledger`` (``smoke_dag_seconds``,
    ``smoke_stage_times``; ``benchmarks/suite.py`` reads them)."""
    from filelock import FileLock

    reuse = os.environ.get("SMOKE_REPO")
    if reuse:  # iterating on tests: a workspace an earlier session left (--basetemp), not rerun
        return SmokeRepo(root=Path(reuse).resolve())
    shared = session_shared_dir(tmp_path_factory)
    record = shared / "smoke_repo.json"
    with FileLock(str(shared / "smoke_repo.lock")):
        if not record.is_file():
            try:
                info = _build_smoke_repo(tmp_path_factory, repro_targets(request.session))
            except BaseException as err:
                record.write_text(json.dumps({"error": f"{type(err).__name__}: {err}"[-6000:]}))
                raise
            record.write_text(json.dumps(info))
    info = json.loads(record.read_text())
    if "error" in info:
        pytest.fail(f"the shared smoke DAG run failed in another worker:\n{info['error']}", pytrace=False)
    return SmokeRepo(root=Path(info["root"]), network_free=info["network_free"], seconds=info["seconds"],
                     stage_times=info["stage_times"])
