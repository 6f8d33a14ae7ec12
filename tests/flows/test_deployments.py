"""Deployments: prefect.yaml and flows/serve.py agree with the DAG, and register on a server."""

from __future__ import annotations

from pathlib import Path

import yaml
from prefect.flows import load_flow_from_entrypoint

from flows.serve import deployments
from tests.flows.conftest import BIN, run

ROOT = Path(__file__).resolve().parents[2]


def test_prefect_yaml_has_nightly_and_a_papers_deployment():
    spec = yaml.safe_load((ROOT / "prefect.yaml").read_text())
    by_name = {d["name"]: d for d in spec["deployments"]}
    assert set(by_name) == {"nightly", "papers"}
    assert by_name["nightly"]["schedules"][0]["cron"] == "0 2 * * *"
    for dep in spec["deployments"]:
        path, _ = dep["entrypoint"].split(":")
        assert not Path(path).is_absolute() and (ROOT / path).is_file()
        assert load_flow_from_entrypoint(str(ROOT / dep["entrypoint"])).name == "reproduce"
    assert all(not Path(d).is_absolute() for step in spec["pull"] for args in step.values() for d in args.values())


def test_serve_deployments_register_with_schedule(fixture_repo, prefect_server):
    from prefect.client.orchestration import get_client

    made = deployments(fixture_repo)
    assert [d.name for d in made] == ["nightly", "alpha", "beta"]
    ids = [d.apply() for d in made]
    with get_client(sync_client=True) as client:
        stored = [client.read_deployment(i) for i in ids]
    assert stored[0].schedules[0].schedule.cron == "0 2 * * *"
    assert stored[1].parameters == {"papers": ["alpha"], "runner": "threads", "root": str(fixture_repo.resolve())}
    assert not stored[1].schedules


def test_prefect_deploy_accepts_prefect_yaml(prefect_server):
    import prefect.settings

    env = {"PREFECT_API_URL": prefect.settings.PREFECT_API_URL.value()}
    cli = str(BIN / "prefect")
    run([cli, "work-pool", "create", "local", "--type", "process", "--overwrite"], ROOT, extra_env=env)
    run([cli, "--no-prompt", "deploy", "--all"], ROOT, extra_env=env)
    listed = run([cli, "deployment", "ls"], ROOT, extra_env=env).stdout
    assert "reproduce/nightly" in listed and "reproduce/papers" in listed

