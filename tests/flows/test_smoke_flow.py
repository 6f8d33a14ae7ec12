"""A real paper's smoke DAG, once, through the Prefect flow in a temporary copy of the repository."""

from __future__ import annotations

import json

import pytest

from benchmarks.orchestration import copy_repo
from flows.reproduce import artifact_key, load_dag, reproduce, select
from tests.flows.conftest import stale

PAPER = "matrix_denoising"  # the cheapest paper; the whole DAG is `dvc repro`'s test in tests/pipeline


@pytest.mark.slow
def test_smoke_paper_through_the_flow(tmp_path, prefect_server):
    from prefect.client.orchestration import get_client
    from prefect.client.schemas.filters import ArtifactFilter, ArtifactFilterKey

    repo = copy_repo(tmp_path / "repo")
    plan = select(load_dag(repo), papers=[PAPER])
    state = reproduce(papers=[PAPER], root=str(repo), return_state=True)
    assert state.is_completed(), state.message
    assert state.result()["ran"] == plan
    assert stale(repo).isdisjoint(plan)
    with get_client(sync_client=True) as client:
        found = client.read_artifacts(artifact_filter=ArtifactFilter(key=ArtifactFilterKey(any_=[artifact_key(PAPER)])))
    assert found and "Verdict" in found[-1].data
    assert json.loads((repo / "reports" / PAPER / "claim.json").read_text())["profile"] == "smoke"
