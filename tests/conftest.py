"""Shared fixtures: the repository root and smoke-profile params files."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

import stages  # noqa: F401  (applies the offline switches before any library is imported)

ROOT = Path(__file__).resolve().parents[1]

# session-scoped smoke assets (digits_asset, ...) and the shared smoke-profile DAG run (smoke_repo)
pytest_plugins = ["tests.asset_fixtures", "tests.smoke"]


def write_params(tmp_path: Path, profile: str = "smoke", **edits: object) -> Path:
    """A copy of params.yaml at ``profile``; ``edits`` maps dotted keys to new values."""
    params = yaml.safe_load((ROOT / "params.yaml").read_text())
    params["profile"] = profile
    for dotted, value in edits.items():
        node = params
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    path = tmp_path / "params.yaml"
    path.write_text(yaml.safe_dump(params, sort_keys=False))
    return path


@pytest.fixture
def smoke_params(tmp_path: Path) -> Path:
    """params.yaml at the smoke profile, in a temporary folder."""
    return write_params(tmp_path)


# the test that runs the whole smoke DAG a second time (about as long as the shared run itself)
DETERMINISM_TEST = "test_a_second_smoke_run_reproduces_every_output_bit_for_bit"


def schedule_rank(item: pytest.Item) -> int:
    """Where a test goes in the run order: the determinism rerun first, then the tests that need no
    smoke DAG, then the tests that read it. Under pytest-xdist the first worker to take the
    determinism test builds the shared smoke DAG and reruns it, while the other worker runs the
    tests that need neither, so no worker sits idle waiting for the build and the rerun does not
    start last and run alone."""
    if getattr(item, "originalname", item.name) == DETERMINISM_TEST:
        return 0
    return 2 if "smoke_repo" in getattr(item, "fixturenames", ()) else 1


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run order by ``schedule_rank`` (a stable sort: within a rank, collection order). Under
    pytest-xdist (``--dist loadgroup``), the Prefect tests run in one worker, one after another: they
    share a session's Prefect server and start UI and Dask processes of their own."""
    items.sort(key=schedule_rank)
    flows = ROOT / "tests" / "flows"
    for item in items:
        if Path(str(item.path)).is_relative_to(flows):
            item.add_marker(pytest.mark.xdist_group("prefect"))
