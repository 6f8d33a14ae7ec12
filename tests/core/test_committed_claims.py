"""Every committed claim.json is what the verdict code computes from its own recorded values.

A change to the verdict code (stages/core/verdict.py, stages/core/gates.py) that would move a committed
status, verdict or rule text fails here, on the results the project reports, without rerunning them.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from stages.core.config import load_section
from stages.core.verdict import ClaimRecord, VerdictRule, check_status, decide

ROOT = Path(__file__).resolve().parents[2]
CLAIMS = sorted(ROOT.glob("reports/*/claim.json"))


def test_there_are_committed_claims_to_check():
    assert len(CLAIMS) >= 19


@pytest.mark.parametrize("path", CLAIMS, ids=[p.parent.name for p in CLAIMS])
def test_the_committed_claim_follows_from_its_values_under_the_registered_rule(path):
    claim = ClaimRecord.model_validate(json.loads(path.read_text()))
    paper = path.parent.name
    rule = load_section(VerdictRule, f"{paper}.verdict", ROOT / "params.yaml",
                        profile=claim.profile)
    assert rule.describe() in claim.verdict_rule, paper
    assert [o.name for o in claim.checks] == [c.name for c in rule.checks]
    # gates (positive controls, preconditions) are named after the rule's own words, by check name or metric
    after = claim.verdict_rule.split(rule.describe(), 1)[1]
    gates = [c.name for c in rule.checks if c.name in after or c.metric in after]
    gated = bool(gates)
    gate_failed = any(o.status != "holds" for o in claim.checks if o.name in gates)
    for check, outcome in zip(rule.checks, claim.checks, strict=True):
        assert outcome.description == check.describe()
        status = check_status(check, outcome.values, rule.min_seeds)
        # a gate that did not hold turns every claim check unclear (stages/core/gates.py)
        assert outcome.status == status or (gate_failed and outcome.status == "unclear"), (paper, check.name)
    if not gated:
        verdict, _ = decide(rule, {c.metric: o.values for c, o in zip(rule.checks, claim.checks, strict=True)})
        assert claim.verdict == verdict
