"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.espo.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"sudoku_espo_minus_d1_success": [0.3] * 3, "sudoku_espo_minus_token_elbo_success": [0.2] * 3,
        "sudoku_espo_minus_warmstart_success": [0.4] * 3, "sudoku_k2_minus_best_k1_k3_success": [0.1] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"sudoku_k2_minus_best_k1_k3_success": [0.0] * 3}, "partly"),
    ({k: [-0.05] * 3 for k in GOOD}, "not_reproduced"),
    ({k: [0.1, -0.05, 0.1] for k in GOOD}, "inconclusive"),
    ({"sudoku_k2_minus_best_k1_k3_success": []}, "partly"),   # ablations not run: that check is unclear
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected
