"""The paper's own verdict rule (from params.yaml) on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.verdict import decide
from stages.mtd_mirror_descent.config import load_report

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"shallow_kl_over_md1": [0.9] * 3, "shallow_bayes_minus_md1_shrunk_tv": [0.01] * 3,
        "deep_multistep_margin_shrunk_tv": [0.005] * 3, "shallow_layer1_gain_over_positional": [0.2] * 3}
BAD = {"shallow_kl_over_md1": [3.0] * 3, "shallow_bayes_minus_md1_shrunk_tv": [-0.01] * 3,
       "deep_multistep_margin_shrunk_tv": [-0.005] * 3, "shallow_layer1_gain_over_positional": [-0.2] * 3}


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"shallow_layer1_gain_over_positional": [0.0] * 3}, "partly"),
    ({"shallow_kl_over_md1": [1.2] * 3}, "partly"),
    (BAD, "not_reproduced"),
    ({k: [GOOD[k][0], BAD[k][0], GOOD[k][0]] for k in GOOD}, "inconclusive"),
])
def test_rule_gives_each_verdict(edits, expected):
    rule = load_report(ROOT / "params.yaml").verdict
    assert decide(rule, {**GOOD, **edits})[0] == expected


def test_a_model_no_better_than_shrinkage_fails_the_closeness_checks():
    """Shrinkage of MD1 is matched by shrinkage of Bayes at margin 0: the check must not hold at 0."""
    rule = load_report(ROOT / "params.yaml").verdict
    _, outcomes = decide(rule, {**GOOD, "shallow_bayes_minus_md1_shrunk_tv": [0.0] * 3,
                                "deep_multistep_margin_shrunk_tv": [0.0] * 3})
    status = {o.name: o.status for o in outcomes}
    assert status["3-layer closer to shrunk 1-step MD than to shrunk Bayes"] == "fails"
    assert status["5-layer closer to shrunk multi-step MD than to shrunk 1-step MD and Bayes"] == "fails"
