"""stages/repro.py: DVC's stages run side by side give the results, dvc.lock and status of `dvc repro`."""

from __future__ import annotations

import json
import sys

import pytest
import yaml

from stages.repro import Dag, load_dag, main, reproduce
from tests.flows.conftest import BIN, FIXTURE_STAGES, make_fixture_repo, run, set_params, stale


def _lock_outs(repo) -> dict[str, list]:
    lock = yaml.safe_load((repo / "dvc.lock").read_text())["stages"]
    return {name: sorted((o["path"], o.get("md5")) for o in entry.get("outs", [])) for name, entry in lock.items()}


def test_downstream_depth_puts_the_longest_chain_first():
    dag = Dag({"a": (), "b": ("a",), "c": ("b",), "d": (), "e": ("c", "d")})
    assert dag.downstream_depth(dag.stages) == {"a": 4, "b": 3, "c": 2, "d": 2, "e": 1}
    assert dag.closure(["c"]) == ["a", "b", "c"]


def test_two_jobs_overlap_branches_and_record_what_dvc_repro_records(tmp_path):
    parallel, serial = make_fixture_repo(tmp_path / "p"), make_fixture_repo(tmp_path / "s")
    outcome = reproduce(parallel, jobs=2, echo=False)
    assert set(outcome.ran) == FIXTURE_STAGES and not outcome.failed and not outcome.not_run
    alpha, beta = outcome.spans["alpha-data"], outcome.spans["beta-data"]
    assert alpha[0] < beta[1] and beta[0] < alpha[1]  # the two papers' branches ran at the same time
    for stage, ups in load_dag(parallel).upstream.items():
        assert all(outcome.spans[u][1] <= outcome.spans[stage][0] for u in ups)  # never before its inputs
    run([str(BIN / "dvc"), "repro"], serial)
    assert _lock_outs(parallel) == _lock_outs(serial)
    assert stale(parallel) == set()
    again = reproduce(parallel, jobs=2, echo=False)
    assert again.ran == [] and not again.failed  # everything up to date: nothing reruns


def test_a_target_runs_only_what_it_needs(tmp_path):
    repo = make_fixture_repo(tmp_path / "r")
    outcome = reproduce(repo, ["alpha-report"], jobs=2, echo=False)
    assert set(outcome.ran) == {"assets-base", "alpha-data", "alpha-report"}


def test_times_give_each_stage_its_wall_and_cpu_seconds(tmp_path):
    repo = make_fixture_repo(tmp_path / "r")
    set_params(repo, alpha={"sleep": 2})
    assert main(["--jobs", "2", "--root", str(repo), "--times", str(tmp_path / "t.json"), "alpha-data"]) == 0
    times = json.loads((tmp_path / "t.json").read_text())
    assert set(times["stages"]) == {"assets-base", "alpha-data"} and times["jobs"] == 2
    data = times["stages"]["alpha-data"]
    # alpha-data sleeps 2 s: its wall time holds the sleep, its CPU time (DVC and python starting) is measured
    assert data["wall_s"] >= 2 and 0 < data["cpu_s"]
    assert times["wall_s"] >= data["wall_s"]


def test_a_failed_stage_stops_new_stages_and_the_command_exits_1(tmp_path, capsys):
    repo = make_fixture_repo(tmp_path / "r")
    set_params(repo, beta={"fail": True}, alpha={"sleep": 0})
    code = main(["--jobs", "2", "--root", str(repo)])
    assert code == 1
    err = capsys.readouterr().err
    assert "failed: beta-data" in err
    for downstream in ("beta-train@1", "beta-train@2", "beta-report", "claims"):
        assert downstream in err.split("not run:")[1]
    assert {"beta-data", "claims"} <= stale(repo)


def test_unknown_stage_and_bad_jobs_are_refused_before_any_stage_runs(tmp_path):
    repo = make_fixture_repo(tmp_path / "r")
    with pytest.raises(SystemExit) as refused:
        main(["--root", str(repo), "no-such-stage"])
    assert refused.value.code == 2
    with pytest.raises(ValueError, match="jobs"):
        reproduce(repo, jobs=0)
    assert not (repo / "dvc.lock").exists()
    assert run([sys.executable, "-m", "stages.repro", "--help"], repo).returncode == 0
