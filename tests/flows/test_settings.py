"""prefect.toml is the one place of the project's Prefect settings: `prefect` commands in the
repository root read it themselves, and anything that imports ``flows`` applies it from anywhere."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from flows.settings import prefect_env
from tests.flows.conftest import BIN

ROOT = Path(__file__).resolve().parents[2]
SHOW = ("import flows; from prefect.settings import get_current_settings as g; s = g(); "
        "print(s.home, s.server.analytics_enabled, s.server.ephemeral.startup_timeout_seconds, s.server.api.host)")


def _clean_env() -> dict[str, str]:
    """The environment without any PREFECT_* variable (as a new shell has it)."""
    return {k: v for k, v in os.environ.items() if not k.startswith("PREFECT_")}


def test_prefect_toml_as_variables():
    env = prefect_env()
    assert env["PREFECT_HOME"] == str(ROOT / ".cache" / "prefect")
    assert env["PREFECT_SERVER_ANALYTICS_ENABLED"] == "false"
    assert env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] == "90"
    assert env["PREFECT_SERVER_API_HOST"] == "127.0.0.1"


def test_prefect_cli_in_the_root_reads_prefect_toml():
    out = subprocess.run([str(BIN / "prefect"), "config", "view", "--show-sources"], cwd=ROOT, env=_clean_env(),
                         capture_output=True, text=True, timeout=120).stdout
    for line in ("PREFECT_HOME='.cache/prefect' (from prefect.toml)",
                 "PREFECT_SERVER_ANALYTICS_ENABLED='False' (from prefect.toml)",
                 "PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS='90' (from prefect.toml)"):
        assert line in out, out


def test_flows_apply_prefect_toml_from_any_folder(tmp_path):
    env = {**_clean_env(), "PYTHONPATH": str(ROOT)}
    out = subprocess.run([sys.executable, "-c", SHOW], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split() == [str(ROOT / ".cache" / "prefect"), "False", "90", "127.0.0.1"], out.stderr
    env["PREFECT_SERVER_EPHEMERAL_STARTUP_TIMEOUT_SECONDS"] = "300"  # a variable that is set wins
    out = subprocess.run([sys.executable, "-c", SHOW], cwd=tmp_path, env=env, capture_output=True, text=True,
                         timeout=120)
    assert out.stdout.split()[2] == "300", out.stderr
