"""The Prefect flow on the fixture DAG: tasks, order, concurrency, failures, artifacts."""

from __future__ import annotations

import json

import pytest

from flows import reproduce as rp
from flows.reproduce import NOT_RUN, Dag, SelectionError, artifact_key, load_dag, paper_of, reproduce, select
from tests.flows.conftest import FIXTURE_STAGES, set_params, stale


def _result(state) -> dict:
    return rp.summary_of(state)


def _task_runs(flow_run_id) -> dict:
    """The task runs of a flow run by name."""
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import FlowRunFilter, FlowRunFilterId

    with get_client(sync_client=True) as client:
        runs = client.read_task_runs(flow_run_filter=FlowRunFilter(id=FlowRunFilterId(any_=[flow_run_id])))
    return {run.name: run for run in runs}


def test_tasks_are_the_expanded_dvc_stages_in_topological_order(fixture_repo):
    dag = load_dag(fixture_repo)
    assert set(dag.stages) == FIXTURE_STAGES
    position = {s: i for i, s in enumerate(dag.stages)}
    for stage, ups in dag.upstream.items():
        assert all(position[u] < position[stage] for u in ups)
    assert set(dag.upstream["beta-report"]) == {"beta-train@1", "beta-train@2"}
    assert dag.papers == ["alpha", "beta"]


def test_paper_of_and_selection():
    assert paper_of("matrix_denoising-report") == "matrix_denoising"
    assert paper_of("beta-train@2") == "beta"
    assert paper_of("claims") is None and paper_of("assets-text") is None
    dag = Dag({"assets-base": (), "alpha-data": ("assets-base",), "beta-data": ("assets-base",),
               "claims": ("alpha-data", "beta-data")})
    assert select(dag) == dag.stages
    assert select(dag, papers=["alpha"]) == ["assets-base", "alpha-data"]
    assert select(dag, stage_names=["claims"]) == dag.stages
    with pytest.raises(SelectionError, match=r"unknown paper id\(s\) \['gamma'\]; valid: \['alpha', 'beta'\]"):
        select(dag, papers=["gamma"])
    with pytest.raises(SelectionError, match=r"unknown stage name.*nope.*valid: .*alpha-data"):
        select(dag, stage_names=["nope"])
    assert artifact_key("matrix_denoising") == "matrix-denoising-results"


def test_unknown_paper_fails_before_any_stage_runs(fixture_repo, prefect_server):
    with pytest.raises(SelectionError, match="valid: \\['alpha', 'beta'\\]"):
        reproduce(papers=["gamma"], root=str(fixture_repo))
    assert not (fixture_repo / "data").exists()


def test_flow_runs_the_dag_concurrently_and_publishes_artifacts(fixture_repo, prefect_server):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    state = reproduce(root=str(fixture_repo), return_state=True)
    assert state.is_completed(), state.message
    summary = _result(state)
    assert set(summary["ran"]) == FIXTURE_STAGES and not summary["failed"]
    times = summary["timings"]
    alpha, beta = times["alpha-data"], times["beta-data"]
    assert alpha["start"] < beta["end"] and beta["start"] < alpha["end"]  # the two branches overlapped
    for stage, ups in load_dag(fixture_repo).upstream.items():
        assert all(times[u]["end"] <= times[stage]["start"] for u in ups)
    assert stale(fixture_repo) == set()

    with get_client(sync_client=True) as client:
        artifacts = client.read_artifacts(artifact_filter=ArtifactFilter(
            key=ArtifactFilterKey(any_=["alpha-results", "beta-results"])))
    by_key = {a.key: a for a in artifacts}
    assert set(by_key) == {"alpha-results", "beta-results"}
    alpha_md = by_key["alpha-results"].data
    assert "Paper alpha" in alpha_md and "**Verdict: partly**" in alpha_md
    assert "| n is positive: n >= 1 | **holds** | 1 | 1 |" in alpha_md
    assert "| n is stable: spread <= 0.1 | **unclear** | 0.05 | n/a |" in alpha_md
    assert summary["verdicts"] == {"alpha": "partly", "beta": "partly"}

    tasks = _task_runs(state.state_details.flow_run_id)  # the stages are tasks of the run itself, no subflow
    assert set(tasks) == FIXTURE_STAGES and all(t.state.is_completed() for t in tasks.values())

    again = _result(reproduce(papers=["alpha"], root=str(fixture_repo), return_state=True))
    assert set(again["up_to_date"]) == {"assets-base", "alpha-data", "alpha-report"} and not again["ran"]


def test_failed_stage_stops_only_its_downstream(fixture_repo, prefect_server):
    set_params(fixture_repo, beta={"fail": True})
    state = reproduce(root=str(fixture_repo), return_state=True)
    assert state.is_failed()
    assert state.message.startswith("stage beta-data failed: RuntimeError: beta-data failing on purpose")
    assert state.message.endswith("; 4 downstream stage(s) not run")
    summary = _result(state)
    assert summary["failed"] == ["beta-data"]
    assert set(summary["not_run"]) == {"beta-train@1", "beta-train@2", "beta-report", "claims"}
    assert set(summary["ran"]) == {"assets-base", "alpha-data", "alpha-report"}
    assert stale(fixture_repo) & {"assets-base", "alpha-data", "alpha-report"} == set()

    tasks = _task_runs(state.state_details.flow_run_id)
    failed = tasks["beta-data"].state
    assert failed.is_failed() and failed.message == "beta-data: RuntimeError: beta-data failing on purpose"
    for stage in summary["not_run"]:  # never-run stages end, with the reason, instead of staying Pending
        skipped = tasks[stage].state
        assert skipped.is_cancelled() and skipped.name == NOT_RUN, (stage, skipped)
        assert skipped.message == "not run: upstream stage beta-data failed" and tasks[stage].end_time is not None


def test_refused_params_key_is_named_by_the_failed_run(fixture_repo, prefect_server):
    set_params(fixture_repo, alpha={"n": 0})
    state = reproduce(papers=["alpha"], root=str(fixture_repo), return_state=True)
    assert state.is_failed()
    assert state.message == ("stage alpha-data failed: [alpha-data] refused params (params.yaml): "
                             "alpha.n: must be >= 1, got 0; 1 downstream stage(s) not run")


def test_stage_error_picks_the_line_that_says_why():
    dvc_tail = "ERROR: failed to reproduce 'p-train': failed to run: python -m x, exited with 1"
    traceback = ["Running stage 'p-train':", "> python -m x", "Traceback (most recent call last):",
                 '  File "x.py", line 1, in <module>', "ValueError: lr must be positive", dvc_tail]
    assert rp.stage_error("p-train", traceback, 1) == "ValueError: lr must be positive"
    refused = ["[p-train] refused params (params.yaml): p.train.lr: Input should be greater than 0", dvc_tail]
    assert rp.stage_error("p-train", refused, 2).endswith("p.train.lr: Input should be greater than 0")
    assert rp.stage_error("p-train", [dvc_tail], 255) == dvc_tail
    assert [rp.duration(s) for s in (4.25, 125, 3720)] == ["4.2 s", "2 min 05 s", "1 h 02 min"]


def test_results_markdown_lists_every_check_per_seed(tmp_path):
    (tmp_path / "reports" / "p").mkdir(parents=True)
    checks = [{"description": "gap small: gap <= 0.05", "status": "fails", "values": [0.13, 0.07, 0.12]},
              {"description": "limit: err <= 0.05", "status": "holds", "values": [0.026, 0.014, 0.031]}]
    (tmp_path / "reports/p/claim.json").write_text(json.dumps(
        {"title": "P", "verdict": "partly", "profile": "default", "seeds": [0, 1, 2], "checks": checks}))
    (tmp_path / "reports/p/metrics.json").write_text("{}")
    text = rp.report_markdown(tmp_path, "p")
    assert "**Verdict: partly** (profile default, seeds 0, 1, 2)" in text
    assert "Checks: 1 hold, 1 fail, 0 unclear." in text
    assert "| check | status | seed 0 | seed 1 | seed 2 |" in text
    assert "| gap small: gap <= 0.05 | **fails** | 0.13 | 0.07 | 0.12 |" in text
