"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.text2grad.config import load_report
from stages.text2grad.report import verdict_metrics

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"rouge_text2grad_minus_scalar": [0.03] * 3, "rouge_text2grad_minus_dense": [0.05] * 3,
        "rouge_text2grad_minus_no_critique": [0.02] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"rouge_text2grad_minus_dense": [-0.02] * 3}, "partly"),
    ({k: [-0.01] * 3 for k in GOOD}, "not_reproduced"),
    ({k: [0.03, -0.02, 0.03] for k in GOOD}, "inconclusive"),
    ({k: v[:2] for k, v in GOOD.items()}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected


def test_verdict_metrics_are_per_seed_differences_from_text2grad():
    final = {"text2grad": {"rouge_l": [0.8, 0.7]}, "scalar": {"rouge_l": [0.75, 0.72]}}
    out = verdict_metrics(final)
    assert list(out) == ["rouge_text2grad_minus_scalar"]
    assert out["rouge_text2grad_minus_scalar"] == pytest.approx([0.05, -0.02])
