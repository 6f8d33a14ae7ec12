"""The committed dvc.lock matches the committed code and params (results cannot go stale)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_dvc_lock_matches_code_and_params():
    proc = subprocess.run([sys.executable, "-m", "dvc", "status", "--json"], cwd=ROOT, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    status = json.loads(proc.stdout or "{}")
    stale = {}
    for stage, changes in status.items():
        for change in changes:
            if isinstance(change, str):  # e.g. "changed checksum", "always changed"
                stale.setdefault(stage, []).append(change)
                continue
            for kind in ("changed deps", "changed params", "changed command"):
                if kind in change:
                    # a dep that is another stage's cached output may be absent on a fresh clone
                    items = {k: v for k, v in change[kind].items()
                             if not (v == "deleted" and k.startswith(("data/", "models/")))}
                    if items:
                        stale.setdefault(stage, []).append({kind: items})
    assert not stale, f"dvc.lock is stale; rerun `dvc repro` and commit dvc.lock + reports/: {stale}"
