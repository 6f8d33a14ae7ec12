"""The paper's verdict rule (params.yaml) with its power gate and positive-control gate on made-up metrics: every
verdict is reachable, and a failed gate makes every claim unclear."""

from pathlib import Path

import pytest

from stages.entropylong.config import METRICS, load_report
from stages.entropylong.report import gated_claim

ROOT = Path(__file__).resolve().parents[2]
GATE, EL_NV, EL_C, EL_B = ("base_content_gain", "gain_entropylong_minus_no_verification",
                           "gain_entropylong_minus_concatenation", "gain_entropylong_minus_base")
GOOD = {GATE: [0.3, 0.3, 0.3], "content_gain_min": [0.2, 0.25, 0.3], "alone_loss_rise_max": [0.01, -0.02, 0.0],
         EL_NV: [0.03, 0.04, 0.05], EL_C: [0.05, 0.04, 0.06], EL_B: [0.05, 0.06, 0.04],
        "gain_no_verification_minus_concatenation": [0.01, 0.0, 0.01]}
TIGHT_FAIL = [-0.05, -0.051, -0.049]


def _verdict(edits: dict[str, list[float]]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    claim = gated_claim(cfg.verdict, cfg.report.gates, cfg.report.power_gate, {**GOOD, **edits}, seeds=[0, 1, 2],
                        profile="default", timings={"train": 1.0})
    assert len(claim.checks) == len(cfg.verdict.checks)
    return claim.verdict


def test_the_rule_names_only_measured_metrics_and_gates_the_positive_control():
    cfg = load_report(ROOT / "params.yaml")
    assert {c.metric for c in cfg.verdict.checks} <= set(METRICS) and set(GOOD) == set(METRICS)
    gate = [c for c in cfg.verdict.checks if c.name in cfg.report.gates]
    assert [c.metric for c in gate] == [GATE] and cfg.verdict.min_seeds >= 3


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({EL_NV: TIGHT_FAIL}, "partly"),
    ({EL_NV: TIGHT_FAIL, EL_C: TIGHT_FAIL, EL_B: TIGHT_FAIL}, "not_reproduced"),
    ({EL_NV: [0.05, -0.05, 0.02], EL_C: [-0.01, 0.03, 0.0], EL_B: [0.05, -0.05, 0.02]}, "inconclusive"),
    # every seed below the margin, but the seeds scatter so widely that the margin is within reach: no power
    ({EL_NV: [0.009, -0.05, 0.005], EL_C: [0.008, -0.04, 0.0], EL_B: [0.009, -0.05, 0.005]}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    assert _verdict(edits) == expected


def test_failed_positive_control_makes_a_winning_method_inconclusive():
    assert _verdict({GATE: [0.001, 0.001, 0.001]}) == "inconclusive"
    assert _verdict({GATE: [0.0, 0.0, 0.0], EL_NV: TIGHT_FAIL, EL_C: TIGHT_FAIL, EL_B: TIGHT_FAIL}) == "inconclusive"
    cfg = load_report(ROOT / "params.yaml")
    claim = gated_claim(cfg.verdict, cfg.report.gates, True, {**GOOD, GATE: [0.0, 0.0, 0.0]}, seeds=[0, 1, 2],
                        profile="default", timings={"train": 1.0})
    assert {o.status for o in claim.checks if o.name not in cfg.report.gates} == {"unclear"}


def test_power_gate_leaves_a_tight_failure_failed():
    assert _verdict({EL_NV: TIGHT_FAIL, EL_C: TIGHT_FAIL, EL_B: TIGHT_FAIL}) == "not_reproduced"
    loose = [0.009, -0.05, 0.005]
    assert _verdict({EL_NV: loose, EL_C: TIGHT_FAIL, EL_B: TIGHT_FAIL}) == "inconclusive"
