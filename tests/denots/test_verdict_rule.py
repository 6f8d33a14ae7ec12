"""The paper's own verdict rule (from params.yaml) on made-up metrics, with its competence gate."""

from pathlib import Path

import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.core.verdict import decide
from stages.denots.config import load_report
from stages.denots.report import CARD

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"best_baseline_pendulum": [0.9, 0.85, 0.88], "long_vs_d1__anti_feedback": [0.1, 0.2, 0.05],
        "long_vs_d1__strict_feedback": [0.3, 0.4, 0.2], "long_vs_d1__no_feedback_gru": [-0.5, -0.9, -0.3],
        "long_vs_d1__tanh_mlp": [-0.2, -0.1, -0.3], "scale_minus_tolerance": [0.1, 0.05, 0.2],
        "denots_minus_baseline_pendulum": [0.05, 0.02, 0.01]}
CLAIMS = [k for k in GOOD if k != "best_baseline_pendulum"]


def _verdict(measured):
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, measured, seeds=[0, 1, 2], profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"denots_minus_baseline_pendulum": [-0.5, -0.4, -0.6]}, "partly"),
    ({"long_vs_d1__anti_feedback": [-0.3, -0.2, -0.1], "long_vs_d1__strict_feedback": [-0.1, -0.2, -0.1],
      "long_vs_d1__no_feedback_gru": [0.0, 0.01, 0.1], "long_vs_d1__tanh_mlp": [0.0, 0.0, 0.0],
      "scale_minus_tolerance": [-0.1, -0.1, -0.2], "denots_minus_baseline_pendulum": [-0.2, -0.1, -0.3]},
     "not_reproduced"),
    ({k: [1.0, -1.0, 1.0] for k in CLAIMS}, "inconclusive"),
    ({"best_baseline_pendulum": [0.9, 0.2, 0.9]}, "inconclusive"),  # the gate fails on one seed: nothing is read
])
def test_rule_gives_each_verdict(edits, expected):
    assert _verdict({**GOOD, **edits}) == expected


def test_fields_are_checked_one_by_one_not_by_their_minimum():
    rule = load_report(ROOT / "params.yaml").verdict
    metrics = {c.metric for c in rule.checks}
    assert {f"long_vs_d1__{f}" for f in ("anti_feedback", "strict_feedback", "no_feedback_gru", "tanh_mlp")} <= metrics
    assert not any("vowels" in m for m in metrics)  # JapaneseVowels is a ceiling check, reported only


def test_rule_needs_every_metric():
    rule = load_report(ROOT / "params.yaml").verdict
    with pytest.raises(KeyError, match="scale_minus_tolerance"):
        decide(rule, {k: v for k, v in GOOD.items() if k != "scale_minus_tolerance"})
