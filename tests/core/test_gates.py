"""stages/core/gates.py: a gate that does not hold makes every claim unclear; otherwise the claims decide."""

import pytest

from stages.core.gates import gated_verdict, seeds_to_decide
from stages.core.verdict import CheckOutcome, ClaimRecord


def _claim(statuses: dict[str, str], values: dict[str, list[float]] | None = None) -> ClaimRecord:
    values = values or {}
    return ClaimRecord(paper="p", title="t", claim="c", paper_result="r", verdict="inconclusive", verdict_rule="rule",
                       checks=[CheckOutcome(name=n, status=s, values=values.get(n, [1.0, 1.0, 1.0]), description=n)
                               for n, s in statuses.items()],
                       measured={}, seeds=[0, 1, 2], profile="smoke", wall_time_s=0.0)


@pytest.mark.parametrize(("statuses", "expected"), [
    ({"gate": "holds", "a": "holds", "b": "holds"}, "reproduced"),
    ({"gate": "holds", "a": "holds", "b": "fails"}, "partly"),
    ({"gate": "holds", "a": "fails", "b": "fails"}, "not_reproduced"),
    ({"gate": "holds", "a": "unclear", "b": "fails"}, "inconclusive"),
    ({"gate": "fails", "a": "holds", "b": "holds"}, "inconclusive"),
])
def test_gated_verdict_gives_each_outcome(statuses, expected):
    out = gated_verdict(_claim(statuses), ["gate"])
    assert out.verdict == expected
    if statuses["gate"] != "holds":   # a closed gate hides every claim's status
        assert [o.status for o in out.checks] == ["fails", "unclear", "unclear"]
    assert "gates (positive controls)" in out.verdict_rule


def test_a_gate_that_is_not_a_check_is_refused():
    with pytest.raises(KeyError, match="not checks of the verdict rule"):
        gated_verdict(_claim({"a": "holds"}), ["gate"])


def test_seeds_to_decide_hand_computed():
    claim = _claim({"a": "holds", "b": "holds"}, {"a": [0.0, 0.1, 0.2], "b": [0.5, 0.5, 0.5]})
    rows = {r["check"]: r for r in seeds_to_decide(claim, {"a": 0.05, "b": 0.4})}
    assert rows["a"]["seeds for a 95% interval"] == "16"     # ceil((1.96 · 0.1 / 0.05)²) = ceil(15.4)
    assert rows["b"]["seeds for a 95% interval"] == "any"    # no spread: every seed agrees
