"""Offline and analytics switches, set once for every stage, test and flow.

Stages run on machines without network access to model hubs; these variables make
the libraries fail fast (or use local files) instead of trying to reach them.
"""

from __future__ import annotations

import os
from pathlib import Path

OFFLINE_ENV: dict[str, str] = {
    "HF_HUB_OFFLINE": "1",
    "TRANSFORMERS_OFFLINE": "1",
    "HF_DATASETS_OFFLINE": "1",
    "HF_HUB_DISABLE_TELEMETRY": "1",
    "GX_ANALYTICS_ENABLED": "false",
    "DVC_NO_ANALYTICS": "1",
    "PREFECT_SERVER_ANALYTICS_ENABLED": "false",
    "DO_NOT_TRACK": "1",
    "MPLBACKEND": "Agg",
    "TOKENIZERS_PARALLELISM": "false",
}

# Caches that libraries would otherwise put in $HOME; kept under the project.
CACHE_DIRS: dict[str, str] = {
    "HF_HOME": ".cache/huggingface",
    "MPLCONFIGDIR": ".cache/matplotlib",
    "PREFECT_HOME": ".cache/prefect",
}


def apply_offline_env(root: Path | None = None) -> None:
    """Set the offline switches and project-local cache dirs unless already set."""
    root = Path(root) if root is not None else Path(__file__).resolve().parents[2]
    for key, value in OFFLINE_ENV.items():
        os.environ.setdefault(key, value)
    for key, rel in CACHE_DIRS.items():
        os.environ.setdefault(key, str(root / rel))
        Path(os.environ[key]).mkdir(parents=True, exist_ok=True)
