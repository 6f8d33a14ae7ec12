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


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Under pytest-xdist (``--dist loadgroup``), the Prefect tests run in one worker, one after another:
    they share a session's Prefect server and start UI and Dask processes of their own."""
    flows = ROOT / "tests" / "flows"
    for item in items:
        if Path(str(item.path)).is_relative_to(flows):
            item.add_marker(pytest.mark.xdist_group("prefect"))
