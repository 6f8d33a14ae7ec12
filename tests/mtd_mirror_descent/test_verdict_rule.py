"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.mtd_mirror_descent.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"shallow_uniform_minus_md1_tv": [0.05] * 3, "shallow_bayes_minus_md1_tv": [0.01] * 3,
        "md2_tv_shallow_minus_deep": [0.01] * 3, "shallow_layer1_tv_gain": [0.4] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"shallow_layer1_tv_gain": [0.0] * 3}, "partly"),
    ({k: [-0.05] * 3 for k in GOOD}, "not_reproduced"),
    ({k: [0.05, -0.05, 0.05] for k in GOOD}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected
