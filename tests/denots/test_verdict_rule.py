"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.denots.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"feedback_long_vs_d1": [0.02, 0.05], "nofeedback_degradation": [0.8, 1.0],
        "scale_minus_tolerance": [0.1, 0.05], "denots_minus_baseline_pendulum": [0.05, 0.02],
        "denots_minus_baseline_vowels": [0.01, 0.03]}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"denots_minus_baseline_vowels": [-0.05, -0.02]}, "partly"),
    ({"feedback_long_vs_d1": [-0.3, -0.2], "nofeedback_degradation": [0.0, 0.01],
      "scale_minus_tolerance": [-0.1, -0.1], "denots_minus_baseline_pendulum": [-0.2, -0.1],
      "denots_minus_baseline_vowels": [-0.05, -0.02]}, "not_reproduced"),
    ({k: [1.0, -1.0] for k in GOOD}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected


def test_rule_needs_every_metric():
    rule = load_report(ROOT / "params.yaml").verdict
    with pytest.raises(KeyError, match="scale_minus_tolerance"):
        decide(rule, {k: v for k, v in GOOD.items() if k != "scale_minus_tolerance"})
