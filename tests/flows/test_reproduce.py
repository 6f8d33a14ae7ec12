"""The Prefect flow on the fixture DAG: tasks, order, concurrency, failures, artifacts."""

from __future__ import annotations

import pytest

from flows.reproduce import Dag, SelectionError, artifact_key, load_dag, paper_of, reproduce, select
from tests.flows.conftest import FIXTURE_STAGES, set_params, stale


def _result(state) -> dict:
    return state.result(raise_on_failure=False)


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
    assert "Paper alpha" in by_key["alpha-results"].data and "reproduced" in by_key["alpha-results"].data

    again = _result(reproduce(papers=["alpha"], root=str(fixture_repo), return_state=True))
    assert set(again["up_to_date"]) == {"assets-base", "alpha-data", "alpha-report"} and not again["ran"]


def test_failed_stage_stops_only_its_downstream(fixture_repo, prefect_server):
    set_params(fixture_repo, beta={"fail": True})
    state = reproduce(root=str(fixture_repo), return_state=True)
    assert state.is_failed()
    summary = _result(state)
    assert summary["failed"] == ["beta-data"]
    assert set(summary["not_run"]) == {"beta-train@1", "beta-train@2", "beta-report", "claims"}
    assert set(summary["ran"]) == {"assets-base", "alpha-data", "alpha-report"}
    assert stale(fixture_repo) & {"assets-base", "alpha-data", "alpha-report"} == set()
