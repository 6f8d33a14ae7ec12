"""The paper's verdict rule (params.yaml) and the power gate on made-up metrics: every verdict is reachable."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.entropylong.config import load_report
from stages.entropylong.report import power_gated

ROOT = Path(__file__).resolve().parents[2]
EL_NV, NV_C = "gain_entropylong_minus_no_verification", "gain_no_verification_minus_concatenation"
GOOD = {EL_NV: [0.03, 0.04, 0.05], NV_C: [0.02, 0.03, 0.02]}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({NV_C: [-0.05, -0.06, -0.05]}, "partly"),
    ({EL_NV: [-0.05, -0.06, -0.05], NV_C: [-0.04, -0.05, -0.045]}, "not_reproduced"),
    ({EL_NV: [0.05, -0.05, 0.02], NV_C: [-0.01, 0.03, 0.0]}, "inconclusive"),
    # every seed below the margin, but the seeds scatter so widely that the margin is within reach: no power
    ({EL_NV: [0.009, -0.05, 0.005], NV_C: [0.008, -0.04, 0.0]}, "inconclusive"),
])
def test_rule_with_power_gate_gives_each_verdict(edits, expected):
    cfg = load_report(ROOT / "params.yaml")
    assert cfg.report.power_gate
    verdict, outcomes = power_gated(cfg.verdict, decide(cfg.verdict, {**GOOD, **edits})[1])
    assert verdict == expected
    assert len(outcomes) == len(cfg.verdict.checks)


def test_power_gate_leaves_a_tight_failure_failed():
    cfg = load_report(ROOT / "params.yaml")
    tight = {EL_NV: [0.001, 0.002, 0.0015], NV_C: [-0.02, -0.021, -0.019]}
    plain, outcomes = decide(cfg.verdict, tight)
    assert plain == "not_reproduced"
    assert power_gated(cfg.verdict, outcomes)[0] == "not_reproduced"
    loose = {EL_NV: [0.009, -0.05, 0.005], NV_C: [-0.02, -0.021, -0.019]}
    assert decide(cfg.verdict, loose)[0] == "not_reproduced"
    assert power_gated(cfg.verdict, decide(cfg.verdict, loose)[1])[0] == "inconclusive"


def test_failed_positive_control_makes_every_check_unclear():
    cfg = load_report(ROOT / "params.yaml")
    _, outcomes = decide(cfg.verdict, GOOD)
    verdict, gated = power_gated(cfg.verdict, outcomes, control_passed=False)
    assert verdict == "inconclusive" and {o.status for o in gated} == {"unclear"}
