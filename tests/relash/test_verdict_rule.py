"""The paper's own verdict rule (from params.yaml) with its control and memorisation gates, on made-up metrics."""

from pathlib import Path

import pytest

from stages.core.report import decide_claim
from stages.relash.config import load_report
from stages.relash.report import CARD, gated_verdict

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"control_ratio": [0.3] * 3, "memorisation_rate": [0.2] * 3, "structure_ratio": [0.5] * 3,
        "attribute_ratio": [0.6] * 3, "frechet_ratio": [0.4] * 3}


def verdict(per_seed: dict) -> str:
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=[0, 1, 2], profile="default", timings={"data": 1.0})
    return gated_verdict(claim, cfg.report.positive_control, cfg.report.memorisation_guard).verdict


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"attribute_ratio": [1.1] * 3}, "partly"),
    ({"structure_ratio": [1.2] * 3, "attribute_ratio": [1.1] * 3, "frechet_ratio": [2.0] * 3}, "not_reproduced"),
    ({"structure_ratio": [0.5, 1.2, 0.5], "attribute_ratio": [1.1, 0.5, 0.5], "frechet_ratio": [0.4, 0.4, 2.0]},
     "inconclusive"),
    # a failed positive control decides nothing, however good the method looks
    ({"control_ratio": [0.9] * 3}, "inconclusive"),
    # winning by copying training hyperlinks is not the claim
    ({"memorisation_rate": [0.9] * 3}, "inconclusive"),
    ({"memorisation_rate": [0.9] * 3, "structure_ratio": [1.2] * 3, "attribute_ratio": [1.1] * 3,
      "frechet_ratio": [2.0] * 3}, "not_reproduced"),
])
def test_rule_gives_each_verdict(edits, expected):
    assert verdict({**GOOD, **edits}) == expected


def test_guards_alone_never_make_a_partly():
    # the control and the memorisation guard hold, every claim fails: not "partly"
    assert verdict({**GOOD, "structure_ratio": [1.2] * 3, "attribute_ratio": [1.1] * 3,
                    "frechet_ratio": [2.0] * 3}) == "not_reproduced"
