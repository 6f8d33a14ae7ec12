"""The paper's own verdict rule (from params.yaml) on made-up metrics, with its competence gate."""

from pathlib import Path

import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.core.verdict import decide
from stages.denots.config import load_report
from stages.denots.report import CARD

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"best_baseline_pendulum": [0.97, 0.96, 0.98], "long_vs_d1__anti_feedback": [0.1, 0.2, 0.05],
        "long_r2__anti_feedback": [0.9, 0.8, 0.85], "diverged__anti_feedback": [0.0, 0.0, 0.0],
        "long_vs_d1__strict_feedback": [0.3, 0.4, 0.2], "long_r2__strict_feedback": [0.7, 0.9, 0.6],
        "diverged__strict_feedback": [0.0, 0.0, 0.0], "long_vs_d1__no_feedback_gru": [-0.5, -0.9, -0.3],
        "long_vs_d1__tanh_mlp": [-0.2, -0.1, -0.3], "scale_minus_tolerance": [0.1, 0.05, 0.2],
        "denots_minus_baseline_pendulum": [0.05, 0.02, 0.01]}
CLAIMS = [k for k in GOOD if k != "best_baseline_pendulum"]
# every claim check failing on every seed
BAD = {"long_vs_d1__anti_feedback": [-0.3, -0.2, -0.1], "long_r2__anti_feedback": [0.1, 0.2, 0.3],
       "diverged__anti_feedback": [1.0, 2.0, 1.0], "long_vs_d1__strict_feedback": [-0.1, -0.2, -0.1],
       "long_r2__strict_feedback": [0.4, 0.3, -1.0], "diverged__strict_feedback": [1.0, 1.0, 3.0],
       "long_vs_d1__no_feedback_gru": [0.0, 0.01, 0.1], "long_vs_d1__tanh_mlp": [0.0, 0.0, 0.0],
       "scale_minus_tolerance": [-0.1, -0.1, -0.2], "denots_minus_baseline_pendulum": [-0.2, -0.1, -0.3]}


def _verdict(measured):
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, measured, seeds=[0, 1, 2], profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"denots_minus_baseline_pendulum": [-0.5, -0.4, -0.6]}, "partly"),
    (BAD, "not_reproduced"),
    ({k: [GOOD[k][0], BAD[k][1], GOOD[k][2]] for k in CLAIMS}, "inconclusive"),  # seeds disagree on every check
    ({"best_baseline_pendulum": [0.97, 0.2, 0.97]}, "inconclusive"),  # the gate fails on one seed: nothing is read
    ({**BAD, "best_baseline_pendulum": [0.3, 0.2, 0.4]}, "inconclusive"),  # under-trained baselines: nothing read
])
def test_rule_gives_each_verdict(edits, expected):
    assert _verdict({**GOOD, **edits}) == expected


def test_a_feedback_field_diverged_at_both_horizons_fails_its_checks():
    """Floored R² at both D gives R²(D=30) − R²(D=1) = 0, which passes ">= 0"; the R² and divergence checks fail it."""
    rule = load_report(ROOT / "params.yaml").verdict
    measured = {**GOOD, "long_vs_d1__strict_feedback": [0.0, 0.0, 0.0], "long_r2__strict_feedback": [-1.0, -1.0, -1.0],
                "diverged__strict_feedback": [2.0, 2.0, 2.0]}
    status = {o.name: o.status for o in decide(rule, measured)[1]}
    assert status["strict NF field: R2 at D=30 >= R2 at D=1"] == "holds"
    assert status["strict NF field: R2 at D=30 >= 0.5"] == "fails"
    assert status["strict NF field: no run diverged (D = 1, 10, 30)"] == "fails"
    assert _verdict(measured) == "partly"


def test_gate_is_above_the_under_trained_baselines_of_the_first_pass():
    """The first pass's GRU-Δt (R² 0.49 at 150 steps; 0.92 with 400) and best baseline (0.64 to 0.72) pass no more."""
    cfg = load_report(ROOT / "params.yaml")
    gate = next(c for c in cfg.verdict.checks if c.name in cfg.gates)
    assert gate.metric == "best_baseline_pendulum" and gate.threshold > 0.72
    assert _verdict({**GOOD, "best_baseline_pendulum": [0.7169, 0.6411, 0.6956]}) == "inconclusive"


def test_fields_are_checked_one_by_one_not_by_their_minimum():
    rule = load_report(ROOT / "params.yaml").verdict
    metrics = {c.metric for c in rule.checks}
    assert {f"long_vs_d1__{f}" for f in ("anti_feedback", "strict_feedback", "no_feedback_gru", "tanh_mlp")} <= metrics
    assert not any("vowels" in m for m in metrics)  # JapaneseVowels is a ceiling check, reported only


def test_rule_needs_every_metric():
    rule = load_report(ROOT / "params.yaml").verdict
    with pytest.raises(KeyError, match="scale_minus_tolerance"):
        decide(rule, {k: v for k, v in GOOD.items() if k != "scale_minus_tolerance"})
