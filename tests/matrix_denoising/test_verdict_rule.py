"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.matrix_denoising.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"limit_error": [0.01] * 3, "fss_exponent_deviation": [0.05] * 5, "stall_peak_offset": [0.03] * 5,
        "stall_peak_contrast": [3.0] * 5, "transition_location_error": [0.02] * 5}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    # a wrong closed form leaves a gap that does not shrink (exponent near 0), and a gap that
    # shrinks like n^(-1) is not central-limit noise either: both are 0.45+ from -1/2
    ({"fss_exponent_deviation": [0.45] * 5}, "partly"),
    ({"limit_error": [0.3] * 3, "fss_exponent_deviation": [0.5] * 5, "stall_peak_offset": [0.3] * 5,
      "stall_peak_contrast": [1.0] * 5, "transition_location_error": [0.3] * 5}, "not_reproduced"),
    ({"fss_exponent_deviation": [0.05, 0.4, 0.05, 0.05, 0.05], "limit_error": [0.3, 0.01, 0.3],
      "stall_peak_offset": [0.3, 0.01, 0.01, 0.01, 0.01], "stall_peak_contrast": [1.0, 5.0, 1.0, 5.0, 5.0],
      "transition_location_error": [0.2, 0.01, 0.01, 0.01, 0.01]}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected
