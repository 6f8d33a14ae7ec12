import pytest

from stages.core.verdict import Check, VerdictRule, decide

RULE = VerdictRule(min_seeds=3, checks=[
    Check(name="gap small", metric="gap", op="<=", threshold=0.05),
    Check(name="speedup", metric="speedup", op=">=", threshold=2.0),
])


@pytest.mark.parametrize(("measured", "expected"), [
    ({"gap": [0.01, 0.02, 0.03], "speedup": [3, 4, 5]}, "reproduced"),
    ({"gap": [0.01, 0.02, 0.03], "speedup": [1, 1, 1]}, "partly"),
    ({"gap": [0.2, 0.3, 0.4], "speedup": [1, 0.5, 1.5]}, "not_reproduced"),
    ({"gap": [0.01, 0.2, 0.03], "speedup": [1, 3, 1]}, "inconclusive"),   # seeds disagree on both
    ({"gap": [0.01, 0.02], "speedup": [3, 4]}, "inconclusive"),           # fewer seeds than the rule asks
])
def test_each_verdict(measured, expected):
    verdict, outcomes = decide(RULE, measured)
    assert verdict == expected
    assert [o.name for o in outcomes] == ["gap small", "speedup"]


def test_nan_never_passes_and_missing_metric_is_an_error():
    verdict, _ = decide(RULE, {"gap": [float("nan")] * 3, "speedup": [3, 3, 3]})
    assert verdict == "partly"
    with pytest.raises(KeyError, match="speedup"):
        decide(RULE, {"gap": [0.0, 0.0, 0.0]})


def test_rule_is_described_in_words():
    text = RULE.describe()
    assert "gap <= 0.05" in text and "speedup >= 2" in text and "3 seeds" in text
