"""Shared fixtures: the repository root and smoke-profile params files."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml

import stages  # noqa: F401  (applies the offline switches before any library is imported)
from stages.core.config import PARAMS_DIR, SHARED_SECTIONS, read_params, section_file

ROOT = Path(__file__).resolve().parents[1]

# session-scoped smoke assets (digits_asset, ...) and the shared smoke-profile DAG run (smoke_repo)
pytest_plugins = ["tests.asset_fixtures", "tests.smoke"]


def _replace(path: Path, value: Any) -> None:
    """Write ``value`` as YAML to a new file moved over ``path`` (a hard link to ``path`` keeps the old text)."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(yaml.safe_dump(value, sort_keys=False, allow_unicode=True))
    tmp.replace(path)


def write_layout(path: Path, data: dict[str, Any]) -> Path:
    """Write the merged params mapping ``data`` (as ``read_params`` returns it) in the split layout:
    the global switches to ``path``, ``assets`` and each listed paper to ``params/<name>.yaml`` beside
    it (``{}`` for a section ``data`` lacks); other ``params/*.yaml`` files there are removed. Each file
    is replaced, not rewritten in place, so a hard-linked workspace copy never edits the original."""
    papers = data.get("papers")
    names = [*SHARED_SECTIONS, *(p for p in papers if isinstance(p, str))] if isinstance(papers, list) \
        else list(SHARED_SECTIONS)  # a test of a bad ``papers:`` still gets its file written
    globals_ = {k: v for k, v in data.items() if k not in names}
    _replace(path, globals_)
    folder = path.parent / PARAMS_DIR
    folder.mkdir(exist_ok=True)
    for stale in folder.glob("*.yaml"):
        if stale.stem not in names:
            stale.unlink()
    for name in names:
        _replace(section_file(name, path), data.get(name) or {})
    return path


def write_params(tmp_path: Path, profile: str = "smoke", **edits: object) -> Path:
    """A copy of the params (params.yaml and params/) at ``profile`` in ``tmp_path``; ``edits`` maps
    dotted keys of the merged mapping (``espo.train.lr``) to new values."""
    params = read_params(ROOT / "params.yaml")
    params["profile"] = profile
    for dotted, value in edits.items():
        node = params
        *parents, last = dotted.split(".")
        for key in parents:
            node = node[key]
        node[last] = value
    return write_layout(tmp_path / "params.yaml", params)


@pytest.fixture
def smoke_params(tmp_path: Path) -> Path:
    """params.yaml at the smoke profile, in a temporary folder."""
    return write_params(tmp_path)


# the test that records the shared smoke DAG run's cost; it goes first, so one worker starts the build at once
FIRST_TEST = "test_smoke_repro_writes_every_report_and_the_ledger"


def schedule_rank(item: pytest.Item) -> int:
    """Where a test goes in the run order: one test that needs the shared smoke DAG first, then the
    tests that need no smoke DAG, then the tests that read it. Under pytest-xdist the first worker
    builds the shared smoke DAG (both cores, one stage per CPU) while the other runs the tests that
    need none, so no worker sits idle waiting for the build; then both share the tests that read it
    (the per-stage determinism reruns among them)."""
    if getattr(item, "originalname", item.name) == FIRST_TEST:
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
