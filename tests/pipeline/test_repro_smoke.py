"""End to end through DVC at the smoke profile, on the session's shared smoke DAG run."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import pytest

from stages.core.config import load_global, read_params
from tests.conftest import write_layout
from tests.smoke import network_free_prefix, run_cmd


def _write_edited_params(repo: Path, dest: Path, dotted: str, value: object) -> None:
    """Write the copy's params to ``dest`` (and ``params/`` beside it) with one dotted key changed."""
    params = read_params(repo / "params.yaml")
    *parents, last = dotted.split(".")
    node = params
    for key in parents:
        node = node[key]
    node[last] = value
    write_layout(dest, params)


def _stale(repo: Path) -> set[str]:
    return set(json.loads(run_cmd([sys.executable, "-m", "dvc", "status", "--json"], repo).stdout or "{}"))


@pytest.mark.slow
def test_each_report_measures_only_metrics_its_config_declares(smoke_repo):
    """A smoke report measures a subset of ``METRICS`` (a smaller profile may run fewer arms); the
    committed default reports measure all of them (tests/pipeline/test_params_every_paper.py)."""
    from stages.core.stage import declared_metrics

    for paper in load_global(smoke_repo.params).papers:
        measured = set(smoke_repo.json(f"reports/{paper}/metrics.json")["per_seed"])
        declared = declared_metrics(paper)
        assert declared is not None, f"stages/{paper}/config.py declares no METRICS"
        assert measured <= set(declared), f"{paper}: measured but not declared {sorted(measured - set(declared))}"


@pytest.mark.slow
def test_smoke_repro_writes_every_report_and_the_ledger(smoke_repo, record_property):
    if smoke_repo.seconds is not None:  # the shared run's cost, for benchmarks/suite.py (JUnit properties)
        record_property("smoke_dag_seconds", smoke_repo.seconds)
        record_property("smoke_stage_times", json.dumps(smoke_repo.stage_times))
    papers = load_global(smoke_repo.params).papers
    index = (smoke_repo.root / "reports/index.md").read_text()
    for paper in papers:
        claim = smoke_repo.json(f"reports/{paper}/claim.json")
        assert claim["profile"] == "smoke" and claim["verdict"] in {"reproduced", "partly", "not_reproduced",
                                                                    "inconclusive"}
        assert f"[{paper}]({paper}/report.md)" in index
        for check in claim["checks"]:  # the ledger shows every check's status beside the verdict
            assert f"{check['name']} ({check['status']})" in index
    assert "<table>" in (smoke_repo.root / "reports/index.html").read_text()
    assert _stale(smoke_repo.root) == set()
    shown = run_cmd([sys.executable, "-m", "dvc", "metrics", "show", "--json"], smoke_repo.root).stdout
    assert "max_trajectory_gap" in shown


def _linked_copy(src: Path, dest: Path) -> Path:
    """A workspace copy whose files are hard links to the shared run's (seconds, no extra disk), except
    the params files and dvc.lock, which are copied: DVC replaces an output by unlinking it and writing a new
    file, so a stage rerun in the copy never changes the shared workspace's files. DVC's state and
    temporary folder are left out (it rebuilds them)."""
    shutil.copytree(src, dest, symlinks=True, copy_function=os.link,
                    ignore=shutil.ignore_patterns("tmp", "params.yaml", "dvc.lock", "params"))
    for name in ("params.yaml", "dvc.lock"):
        shutil.copy2(src / name, dest / name)
    shutil.copytree(src / "params", dest / "params")
    return dest


@pytest.mark.slow
def test_changing_one_param_reruns_only_its_downstream_stages(smoke_repo, tmp_path):
    """On a copy of the shared workspace (other tests read it meanwhile, in another pytest-xdist worker)."""
    root = _linked_copy(smoke_repo.root, tmp_path / "ws")
    assert _stale(root) == set()
    _write_edited_params(root, root / "params.yaml", "matrix_denoising.evaluate.stall_fraction", 0.4)
    assert _stale(root) == {"matrix_denoising-evaluate"}  # dvc status lists the directly changed stage
    out = run_cmd([sys.executable, "-m", "dvc", "repro"], root).stdout
    assert "Stage 'matrix_denoising-data' didn't change, skipping" in out
    assert "Stage 'matrix_denoising-train' didn't change, skipping" in out
    assert "Running stage 'matrix_denoising-evaluate'" in out
    assert "Running stage 'matrix_denoising-report'" in out
    assert "Running stage 'mtd_mirror_descent-" not in out
    assert _stale(root) == set()
    diff = run_cmd([sys.executable, "-m", "dvc", "params", "diff", "--json"], root).stdout
    assert "stall_fraction" in diff
    edited = Path("params") / "matrix_denoising.yaml"
    assert (smoke_repo.root / edited).read_bytes() != (root / edited).read_bytes()  # not shared


@pytest.mark.slow
def test_cli_refuses_bad_params_naming_the_key(smoke_repo, tmp_path):
    bad = tmp_path / "bad_params.yaml"
    _write_edited_params(smoke_repo.root, bad, "matrix_denoising.train.horizon", -1)
    proc = run_cmd([sys.executable, "-m", "stages.matrix_denoising.train", "--params", str(bad),
                    "--instances", "data/matrix_denoising/instances.parquet",
                    "--trajectories", str(tmp_path / "t.parquet"), "--timing", str(tmp_path / "t.json")],
                   smoke_repo.root, check=False)
    assert proc.returncode == 2
    assert "matrix_denoising.train.horizon" in proc.stderr
    assert not (tmp_path / "t.parquet").exists()


def test_the_smoke_dag_ran_without_network(smoke_repo):
    """Isolation: the shared smoke run (and the determinism reruns) ran in a network namespace with
    no interfaces up, so no stage, subprocess or JVM reached the network; a connection there fails."""
    if not smoke_repo.network_free:
        pytest.skip("no network namespace here (unshare -n and unshare -rn both failed): the DAG ran with network")
    probe = ("import socket\n"
             "try:\n    socket.create_connection(('127.0.0.1', 9), timeout=5)\n"
             "except OSError as err:\n    print(type(err).__name__)\n")
    proc = run_cmd([*network_free_prefix(), sys.executable, "-c", probe], smoke_repo.root)
    assert proc.stdout.strip().endswith("Error"), f"a connection to 127.0.0.1 did not fail: {proc.stdout!r}"
    resolve = run_cmd([*network_free_prefix(), sys.executable, "-c",
                       "import socket\ntry:\n    socket.getaddrinfo('pypi.org', 443)\n    print('resolved')\n"
                       "except OSError:\n    print('offline')"], smoke_repo.root)
    assert resolve.stdout.strip() == "offline"
