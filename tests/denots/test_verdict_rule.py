"""The paper's own verdict rule (from params.yaml) on made-up metrics, with its competence gate."""

from pathlib import Path

import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.core.verdict import decide
from stages.denots.config import load_report
from stages.denots.report import CARD

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"best_baseline_pendulum": [0.97, 0.96, 0.98, 0.95], "long_vs_d1__anti_feedback": [0.1, 0.2, 0.05, 0.15],
        "long_r2__anti_feedback": [0.9, 0.8, 0.85, 0.9], "diverged__anti_feedback": [0.0, 0.0, 0.0, 0.0],
        "long_vs_d1__strict_feedback": [0.3, 0.4, 0.2, 0.3], "long_r2__strict_feedback": [0.7, 0.9, 0.6, 0.8],
        "diverged__strict_feedback": [0.0, 0.0, 0.0, 0.0], "long_vs_d1__no_feedback_gru": [-0.5, -0.9, -0.3, -0.6],
        "long_vs_d1__tanh_mlp": [-0.2, -0.1, -0.3, -0.2], "scale_minus_tolerance": [0.1, 0.05, 0.2, 0.1],
        "denots_minus_baseline_pendulum": [0.05, 0.02, 0.03, 0.04]}
CLAIMS = [k for k in GOOD if k != "best_baseline_pendulum"]
# every claim check failing (on every seed, or with the mean's other bound below its threshold)
BAD = {"long_vs_d1__anti_feedback": [-0.3, -0.2, -0.1, -0.2], "long_r2__anti_feedback": [0.1, 0.2, 0.3, 0.2],
       "diverged__anti_feedback": [1.0, 2.0, 1.0, 1.0], "long_vs_d1__strict_feedback": [-0.1, -0.2, -0.1, -0.1],
       "long_r2__strict_feedback": [0.4, 0.3, 0.2, 0.3], "diverged__strict_feedback": [1.0, 1.0, 3.0, 1.0],
       "long_vs_d1__no_feedback_gru": [0.0, 0.01, 0.1, 0.05], "long_vs_d1__tanh_mlp": [0.0, 0.0, 0.0, 0.0],
       "scale_minus_tolerance": [-0.1, -0.1, -0.2, -0.1], "denots_minus_baseline_pendulum": [-0.2, -0.1, -0.3, -0.2]}
# every mean check's bound straddling its threshold, and the divergence counts disagreeing across seeds
SPLIT = {k: [0.3, -0.2, 0.25, -0.25] for k in CLAIMS if not k.startswith("diverged__")} | \
    {"long_r2__anti_feedback": [0.9, 0.2, 0.85, 0.1], "long_r2__strict_feedback": [0.9, 0.2, 0.85, 0.1],
     "long_vs_d1__no_feedback_gru": [-0.5, 0.4, -0.45, 0.45], "long_vs_d1__tanh_mlp": [-0.5, 0.4, -0.45, 0.45],
     "diverged__anti_feedback": [0.0, 1.0, 0.0, 0.0], "diverged__strict_feedback": [0.0, 1.0, 0.0, 0.0]}


def _verdict(measured):
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, measured, seeds=[0, 1, 2, 3], profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"denots_minus_baseline_pendulum": [-0.5, -0.4, -0.6]}, "partly"),
    (BAD, "not_reproduced"),
    (SPLIT, "inconclusive"),  # every bound straddles its threshold, divergence counts disagree
    ({"best_baseline_pendulum": [0.97, 0.2, 0.97, 0.97]}, "inconclusive"),  # the gate's bound falls below 0.75
    ({**BAD, "best_baseline_pendulum": [0.3, 0.2, 0.4, 0.3]}, "inconclusive"),  # under-trained baselines: nothing read
    ({"denots_minus_baseline_pendulum": [0.3, -0.2, 0.2, -0.1]}, "partly"),  # every seed no longer needed: the mean
    ({"denots_minus_baseline_pendulum": [0.01, 0.02, 0.03]}, "partly"),  # 3 seeds of 4: that check unclear
])
def test_rule_gives_each_verdict(edits, expected):
    assert _verdict({**GOOD, **edits}) == expected


def test_a_feedback_field_diverged_at_both_horizons_fails_its_checks():
    """Floored R² at both D gives R²(D=30) − R²(D=1) = 0, which passes ">= 0"; the R² and divergence checks fail it."""
    rule = load_report(ROOT / "params.yaml").verdict
    measured = {**GOOD, "long_vs_d1__strict_feedback": [0.0] * 4, "long_r2__strict_feedback": [-1.0] * 4,
                "diverged__strict_feedback": [2.0] * 4}
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
    assert _verdict({**GOOD, "best_baseline_pendulum": [0.7169, 0.6411, 0.6956, 0.72]}) == "inconclusive"


def test_fields_are_checked_one_by_one_not_by_their_minimum():
    rule = load_report(ROOT / "params.yaml").verdict
    metrics = {c.metric for c in rule.checks}
    assert {f"long_vs_d1__{f}" for f in ("anti_feedback", "strict_feedback", "no_feedback_gru", "tanh_mlp")} <= metrics
    assert not any("vowels" in m for m in metrics)  # JapaneseVowels is a ceiling check, reported only


def test_rule_needs_every_metric():
    rule = load_report(ROOT / "params.yaml").verdict
    with pytest.raises(KeyError, match="scale_minus_tolerance"):
        decide(rule, {k: v for k, v in GOOD.items() if k != "scale_minus_tolerance"})


def test_r2_checks_read_the_mean_and_divergence_counts_every_seed():
    rule = load_report(ROOT / "params.yaml").verdict
    assert rule.min_seeds >= 4
    for check in rule.checks:
        assert check.over == ("seeds" if check.metric.startswith("diverged__") else "mean"), check.name
    # one seed below its threshold no longer decides a mean check that clears its bound ...
    assert _verdict({**GOOD, "denots_minus_baseline_pendulum": [0.12, -0.01, 0.1, 0.11]}) == "reproduced"
    # ... but one diverged run still fails its field's divergence check
    assert _verdict({**GOOD, "diverged__anti_feedback": [0.0, 1.0, 0.0, 0.0]}) == "partly"


def test_the_replicate_verdict_reads_the_reruns_in_place_of_their_seed():
    from stages.denots.report import replicate_summary

    cfg = load_report(ROOT / "params.yaml")
    claim = gated_verdict(decide_claim(CARD, cfg.verdict, GOOD, seeds=[0, 1, 2, 3], profile="default", timings={}),
                          cfg.gates)
    same = {"seeds": [0], "per_seed": {k: [v[0]] for k, v in GOOD.items()}, "complete": True, "rerun": 17,
            "needed": 17}
    ev = {"seeds": [0, 1, 2, 3], "replicate": same}
    out = replicate_summary(claim, cfg, ev, {}, "default")
    assert out["verdict"] == claim.verdict == "reproduced" and out["same"]
    assert all(v == 0 for v in out["changes"].values())
    # seed 0's DeNOTS run moves below the baseline by enough to pull the mean's bound under 0: the verdict changes
    moved = {**same, "per_seed": {**same["per_seed"], "denots_minus_baseline_pendulum": [-0.3]}}
    out = replicate_summary(claim, cfg, {**ev, "replicate": moved}, {}, "default")
    assert out["verdict"] == "partly" and not out["same"]
    assert out["changes"]["DeNOTS beats the best baseline on the pendulum (R2)"] == pytest.approx(0.35)
    row = next(r for r in out["rows"] if r["check"].startswith("DeNOTS beats"))
    assert row["status"] == "holds" and row["status, +1 ulp"] == "unclear" and row["seed 0, +1 ulp"] == "-0.300"
