"""The flow on a real Dask LocalCluster of two worker processes, with no Prefect server running."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from itertools import combinations
from pathlib import Path

import pytest

from tests.flows.conftest import BIN, FIXTURE_STAGES, set_params, stale

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = """
import json, sys
from flows.reproduce import reproduce, summary_of
state = reproduce(root=sys.argv[1], runner="dask", return_state=True)
print("SUMMARY " + json.dumps({"completed": state.is_completed(), **summary_of(state)}))
"""


@pytest.mark.slow
def test_dask_runner_runs_the_dag_on_two_workers_sharing_one_server(fixture_repo, tmp_path):
    set_params(fixture_repo, beta={"sleep": 2})
    env = {k: v for k, v in os.environ.items() if k != "PREFECT_API_URL"}
    env.update(PREFECT_HOME=str(tmp_path / "prefect"), PATH=f"{BIN}{os.pathsep}{env['PATH']}")  # timeout: prefect.toml
    proc = subprocess.run([sys.executable, "-c", SCRIPT, str(fixture_repo)], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    output = proc.stdout + proc.stderr
    summary = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("SUMMARY "))[8:])
    assert summary["completed"] and set(summary["ran"]) == FIXTURE_STAGES, output[-3000:]
    times = summary["timings"]
    assert len({t["pid"] for t in times.values()}) == 2
    assert any(a["pid"] != b["pid"] and a["start"] < b["end"] and b["start"] < a["end"]
               for a, b in combinations(times.values(), 2))  # two workers ran stages at the same time
    assert output.count("Starting temporary server") == 1  # the workers used the flow's server
    assert stale(fixture_repo) == set()
