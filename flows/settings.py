"""The project's Prefect settings (``prefect.toml`` at the repository root) as environment variables.

Prefect reads ``prefect.toml`` only from the working directory, and the server is a separate
process that imports nothing of ours; so the file is the one place the settings are written, and
this module exports them as ``PREFECT_*`` variables for every flow, server and test started from
Python (``import flows`` applies them, before Prefect is imported). A variable already set wins.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
TOML = ROOT / "prefect.toml"


def _flatten(table: dict[str, Any], prefix: str = "PREFECT") -> dict[str, Any]:
    """``{"server": {"api": {"port": 4200}}}`` -> ``{"PREFECT_SERVER_API_PORT": 4200}``."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        name = f"{prefix}_{key.upper()}"
        out.update(_flatten(value, name) if isinstance(value, dict) else {name: value})
    return out


def prefect_env(path: Path = TOML) -> dict[str, str]:
    """The settings of ``path`` as ``PREFECT_*`` variables; the home folder made absolute."""
    env = {}
    for name, value in _flatten(tomllib.loads(path.read_text())).items():
        env[name] = str(value).lower() if isinstance(value, bool) else str(value)
    if "PREFECT_HOME" in env:
        env["PREFECT_HOME"] = str((path.parent / Path(env["PREFECT_HOME"]).expanduser()).resolve())
    return env


def apply_prefect_settings(path: Path = TOML) -> dict[str, str]:
    """Set the variables of :func:`prefect_env` that are not set yet; return the ones in force."""
    for name, value in prefect_env(path).items():
        os.environ.setdefault(name, value)
    Path(os.environ["PREFECT_HOME"]).mkdir(parents=True, exist_ok=True)
    return {name: os.environ[name] for name in prefect_env(path)}


def api_url(host: str | None = None, port: int | str | None = None) -> str:
    """The API address of the project's server (``server.api`` of prefect.toml unless given)."""
    host = host or os.environ.get("PREFECT_SERVER_API_HOST", "127.0.0.1")
    port = port or os.environ.get("PREFECT_SERVER_API_PORT", "4200")
    return f"http://{host}:{port}/api"
