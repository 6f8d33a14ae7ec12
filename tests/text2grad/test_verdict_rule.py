"""The paper's own verdict rule (from params.yaml) on made-up metrics, with its gate."""

from pathlib import Path

import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.text2grad.config import load_report
from stages.text2grad.report import CARD, verdict_metrics

ROOT = Path(__file__).resolve().parents[2]
GATE = "rouge_oracle_token_minus_start"
GOOD = {"rouge_oracle_token_minus_start": [0.05] * 3, "rouge_text2grad_minus_start": [0.02] * 3,
        "rouge_text2grad_minus_scalar": [0.03] * 3, "rouge_text2grad_minus_dense": [0.05] * 3,
        "rouge_text2grad_minus_no_critique": [0.02] * 3, "rouge_oracle_token_minus_oracle_terminal": [0.04] * 3}
CLAIMS = [k for k in GOOD if k != GATE]


def verdict(per_seed):
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(len(per_seed[GATE]))), profile="default",
                         timings={})
    return gated_verdict(claim, cfg.gates)


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"rouge_text2grad_minus_dense": [-0.02] * 3}, "partly"),
    # the old rule's `reproduced` (Text2Grad degrades least) is now partly: it must beat the warm start
    ({"rouge_text2grad_minus_start": [-0.01, 0.005, -0.03]}, "partly"),
    ({"rouge_oracle_token_minus_oracle_terminal": [0.0] * 3}, "partly"),
    ({k: [-0.01] * 3 for k in CLAIMS}, "not_reproduced"),
    ({k: [0.03, -0.02, 0.03] for k in CLAIMS}, "inconclusive"),
    # the gate: if PPO cannot beat the warm start even with exact token rewards, nothing can be read
    ({GATE: [0.0, 0.05, 0.05]}, "inconclusive"),
    ({GATE: [-0.02] * 3, **{k: [-0.01] * 3 for k in CLAIMS}}, "inconclusive"),
    ({k: v[:2] for k, v in GOOD.items()}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    assert verdict({**GOOD, **edits}).verdict == expected


def test_a_closed_gate_makes_every_claim_unclear():
    claim = verdict({**GOOD, GATE: [-0.02] * 3})
    status = {o.name: o.status for o in claim.checks}
    assert status["PPO with oracle token rewards improves on the warm start"] == "fails"
    assert {s for n, s in status.items() if n != "PPO with oracle token rewards improves on the warm start"} == {
        "unclear"}


def test_verdict_metrics_are_per_seed_differences():
    final = {"text2grad": {"rouge_l": [0.8, 0.7]}, "scalar": {"rouge_l": [0.75, 0.72]},
             "oracle_token": {"rouge_l": [0.9, 0.6]}, "oracle_terminal": {"rouge_l": [0.85, 0.65]}}
    out = verdict_metrics(final, [0.6, 0.65])
    assert set(out) == {"rouge_text2grad_minus_scalar", "rouge_text2grad_minus_start",
                        "rouge_oracle_token_minus_start", "rouge_oracle_token_minus_oracle_terminal"}
    assert out["rouge_text2grad_minus_scalar"] == pytest.approx([0.05, -0.02])
    assert out["rouge_text2grad_minus_start"] == pytest.approx([0.2, 0.05])
    assert out["rouge_oracle_token_minus_start"] == pytest.approx([0.3, -0.05])
    assert out["rouge_oracle_token_minus_oracle_terminal"] == pytest.approx([0.05, -0.05])
