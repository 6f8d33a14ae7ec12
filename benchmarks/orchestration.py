"""Orchestration overhead on the smoke DAG: `dvc repro` vs the Prefect flow (threads, Dask).

Each run starts from a fresh temporary copy of the repository at the smoke profile, so
every stage runs. The Prefect server is started once, before the timed runs. Writes
``reports/bench/orchestration.json`` with the wall times and their ratios to `dvc repro`.

    python -m benchmarks.orchestration
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

import yaml

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.core.io import write_json

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _git(args: list[str], cwd: Path) -> str:
    """Output of a git command with a fixed identity."""
    return subprocess.run(["git", "-c", "user.email=b@b", "-c", "user.name=b", *args], cwd=cwd, check=True,
                          capture_output=True, text=True).stdout


def copy_repo(dest: Path, profile: str = "smoke", root: Path = ROOT) -> Path:
    """A committed copy of the repository's files (no reports, no lock) with ``profile`` set."""
    for rel in _git(["ls-files", "--cached", "--others", "--exclude-standard"], root).split():
        src = root / rel
        if src.is_file() and not rel.startswith(("reports/", "dvc.lock")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    params = yaml.safe_load((dest / "params.yaml").read_text())
    params["profile"] = profile
    (dest / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
    _git(["init", "-q"], dest)
    _git(["add", "-A"], dest)
    _git(["commit", "-qm", "copy"], dest)
    return dest


def _timed(run: Callable[[Path], None]) -> float:
    """Seconds for ``run`` on a fresh copy of the repository."""
    with tempfile.TemporaryDirectory(prefix="bench-orchestration-") as tmp:
        repo = copy_repo(Path(tmp))
        start = time.perf_counter()
        run(repo)
        return time.perf_counter() - start


def _dvc_repro(repo: Path) -> None:
    env = {**os.environ, "PATH": f"{BIN}{os.pathsep}{os.environ['PATH']}"}
    subprocess.run([str(BIN / "dvc"), "repro"], cwd=repo, check=True, capture_output=True, env=env)


def _flow(runner: str) -> Callable[[Path], None]:
    from flows.reproduce import reproduce

    def run(repo: Path) -> None:
        state = reproduce(root=str(repo), runner=runner, return_state=True)
        if not state.is_completed():
            raise RuntimeError(f"flow with {runner} failed: {state.message}")

    return run


def main() -> None:
    """Time the three ways of running the smoke DAG and write the ratios."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "reports/bench/orchestration.json")
    args = parser.parse_args()
    os.environ.setdefault("PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS", "90")
    from prefect.testing.utilities import prefect_test_harness

    from flows.reproduce import load_dag

    start = time.perf_counter()
    with prefect_test_harness(server_startup_timeout=90):
        server_s = time.perf_counter() - start
        seconds = {"dvc_repro": _timed(_dvc_repro), "flow_threads": _timed(_flow("threads")),
                   "flow_dask": _timed(_flow("dask"))}
    base = seconds["dvc_repro"]
    write_json({"benchmark": "orchestration", "profile": "smoke", "stages": load_dag(ROOT).stages,
                "seconds": {k: round(v, 2) for k, v in seconds.items()},
                "ratio_to_dvc_repro": {k: round(v / base, 3) for k, v in seconds.items()},
                "prefect_server_startup_s": round(server_s, 2),
                "machine": machine_info()}, args.out)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
