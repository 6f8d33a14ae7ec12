"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.matrix_denoising.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"max_trajectory_gap": [0.02] * 3, "limit_error": [0.01] * 3, "transition_estimate_error": [0.01] * 3,
        "stall_slowdown": [10.0] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"max_trajectory_gap": [0.2] * 3}, "partly"),
    ({"max_trajectory_gap": [0.2] * 3, "limit_error": [0.3] * 3, "transition_estimate_error": [0.2] * 3,
      "stall_slowdown": [1.0] * 3}, "not_reproduced"),
    ({"max_trajectory_gap": [0.02, 0.2, 0.02], "limit_error": [0.3, 0.01, 0.3],
      "transition_estimate_error": [0.2, 0.01, 0.01], "stall_slowdown": [1.0, 5.0, 1.0]}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected
