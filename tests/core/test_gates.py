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


def _rule_params(tmp_path, gates: list[str]):
    from tests.conftest import write_layout

    checks = [{"name": n, "metric": n, "op": ">=", "threshold": 0.0} for n in ("gate", "claim")]
    path = tmp_path / "params.yaml"
    block = {"verdict": {"checks": checks, "min_seeds": 3}, "report": {"gates": gates}}
    return write_layout(path, {"seed": 0, "profile": "default", "threads": 1, "papers": ["p"], "p": block})


def test_load_gated_rule_returns_the_rule_and_its_gates(tmp_path):
    from stages.core.gates import load_gated_rule
    rule, gates = load_gated_rule("p", _rule_params(tmp_path, ["gate"]))
    assert [c.name for c in rule.checks] == ["gate", "claim"] and rule.min_seeds == 3
    assert gates == ["gate"]


@pytest.mark.parametrize(("gates", "message"), [
    (["nope"], r"p\.report\.gates: \['nope'\] are not checks of p\.verdict"),
    (["gate", "claim"], r"p\.report\.gates: at least one check of p\.verdict must be a claim"),
    ([], r"p\.report"),
])
def test_load_gated_rule_refuses_a_bad_gate_list_naming_the_key(tmp_path, gates, message):
    from stages.core.config import ConfigError
    from stages.core.gates import load_gated_rule
    with pytest.raises(ConfigError, match=message):
        load_gated_rule("p", _rule_params(tmp_path, gates))
