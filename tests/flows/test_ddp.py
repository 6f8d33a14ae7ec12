"""DDP on CPU (2 processes, gloo, launched by torchrun) equals one process with the doubled batch."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

from tests.flows.conftest import BIN, run

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_two_process_ddp_equals_one_process_with_doubled_batch(tmp_path: Path):
    ddp, single = tmp_path / "ddp.json", tmp_path / "single.json"
    run([str(BIN / "torchrun"), "--standalone", "--nproc-per-node", "2", "-m", "flows.ddp_check",
         "--devices", "2", "--batch", "8", "--out", str(ddp)], ROOT)
    run([sys.executable, "-m", "flows.ddp_check", "--devices", "1", "--batch", "16", "--out", str(single)], ROOT)
    a, b = json.loads(ddp.read_text()), json.loads(single.read_text())
    assert (a["world_size"], b["world_size"]) == (2, 1)
    assert a["weights"] == pytest.approx(b["weights"], abs=1e-5)
    assert b["weights"] != pytest.approx([0.0] * len(b["weights"]), abs=1e-2)  # it trained
