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


# ---- non-finite and missing per-seed values: a failed seed, never a crash

NAN, INF = float("nan"), float("inf")


@pytest.mark.parametrize(("gap", "status", "recorded"), [
    ([None, None, None], "fails", [None, None, None]),           # every seed diverged (null in JSON)
    ([NAN, INF, None], "fails", [None, None, None]),
    ([0.01, None, 0.02], "unclear", [0.01, None, 0.02]),          # one seed missing: seeds disagree
    ([0.01, NAN, 0.02], "unclear", [0.01, None, 0.02]),
    ([-INF, 0.0, 0.0], "unclear", [None, 0.0, 0.0]),              # -inf <= 0.05, but not finite: fails
])
def test_none_and_non_finite_values_fail_their_seed(gap, status, recorded):
    verdict, outcomes = decide(RULE, {"gap": gap, "speedup": [3, 3, 3]})
    assert [o.status for o in outcomes] == [status, "holds"] and verdict == "partly"
    assert outcomes[0].values == recorded  # what claim.json records: non-finite as null


def test_a_metric_that_is_null_as_a_whole_counts_as_no_seeds():
    verdict, outcomes = decide(RULE, {"gap": None, "speedup": [1, 1, 1]})
    assert [o.status for o in outcomes] == ["unclear", "fails"] and outcomes[0].values == []
    assert verdict == "inconclusive"


def test_all_nan_run_gives_not_reproduced_and_a_claim_that_the_ledger_reads():
    from stages.claims import index_markdown
    from stages.core.report import PaperCard, checks_table, decide_claim
    from stages.core.verdict import ClaimRecord

    card = PaperCard(paper="toy", title="T", claim="c", paper_result="r")
    claim = decide_claim(card, RULE, {"gap": [float("nan")] * 3, "speedup": [None] * 3}, seeds=[0, 1, 2],
                         profile="smoke", timings={"train": 1.0})
    assert claim.verdict == "not_reproduced" and claim.measured == {"gap": "n/a", "speedup": "n/a"}
    again = ClaimRecord.model_validate_json(claim.model_dump_json())  # nulls survive a JSON round trip
    assert again.checks[0].values == [None, None, None]
    assert "n/a, n/a, n/a" in checks_table(again) and "**not_reproduced**" in index_markdown([again])


def test_a_value_that_is_not_a_number_is_a_clear_error():
    with pytest.raises(TypeError, match=r"'gap small'.*'gap'.*'oops'"):
        decide(RULE, {"gap": [0.0, "oops", 0.0], "speedup": [3, 3, 3]})


@pytest.mark.parametrize("bad", [
    {"name": "x", "metric": "m", "op": "<=", "threshold": float("nan")},
    {"name": "x", "metric": "m", "op": "<=", "threshold": float("inf")},
    {"name": "x", "metric": "", "op": "<=", "threshold": 1.0},
    {"name": "x", "metric": " m", "op": "<=", "threshold": 1.0},
    {"name": "x", "metric": "m", "op": "<=", "threshold": True},
])
def test_a_check_refuses_non_finite_thresholds_and_blank_metric_names(bad):
    with pytest.raises(ValueError):
        Check.model_validate(bad)


def test_rule_refuses_duplicate_check_names_and_boolean_seed_counts():
    check = {"name": "x", "metric": "m", "op": "<=", "threshold": 1.0}
    with pytest.raises(ValueError, match="unique"):
        VerdictRule.model_validate({"min_seeds": 1, "checks": [check, check]})
    with pytest.raises(ValueError, match="min_seeds"):
        VerdictRule.model_validate({"min_seeds": True, "checks": [check]})


def test_a_check_on_a_metric_the_report_does_not_measure_is_refused_naming_its_key():
    from stages.core.config import ConfigError
    from stages.core.verdict import refuse_unmeasured

    rule = VerdictRule(min_seeds=1, checks=[
        Check(name="a", metric="gain", op=">=", threshold=0.0),
        Check(name="b", metric="gian", op=">=", threshold=0.0)])
    refuse_unmeasured(rule, {"gain", "gian"}, "p.verdict")  # both measured: nothing to refuse
    with pytest.raises(ConfigError, match=r"^p\.verdict\.checks\.1\.metric: unknown metric 'gian' \(the report "
                                          r"measures gain, loss\)$"):
        refuse_unmeasured(rule, {"gain", "loss"}, "p.verdict")


# ---- checks over the mean: the one-sided t bound decides (values 1, 2, 3: mean 2, sd 1, n 3,
# t_0.95(2) = 2.919986, half-width 2.919986 / sqrt(3) = 1.685854, bounds 0.314146 and 3.685854)

def _mean_check(op, threshold, confidence=0.95):
    return Check(name="m", metric="m", op=op, threshold=threshold, over="mean", confidence=confidence)


def test_the_mean_bound_matches_a_hand_computed_t_interval():
    mean, low, high = _mean_check(">=", 0.0).mean_bounds([1.0, 2.0, 3.0])
    assert mean == 2.0
    assert low == pytest.approx(0.314146, abs=1e-6) and high == pytest.approx(3.685854, abs=1e-6)


@pytest.mark.parametrize(("op", "threshold", "status"), [
    (">=", 0.3, "holds"),      # lower bound 0.314 clears 0.3
    (">=", 0.5, "unclear"),    # bound straddles: every seed passes 0.5, yet the mean is not decided
    (">=", 3.7, "fails"),      # upper bound 3.686 below 3.7
    ("<=", 3.7, "holds"),
    ("<=", 3.5, "unclear"),
    ("<=", 0.3, "fails"),      # lower bound 0.314 above 0.3
])
def test_a_check_over_the_mean_reads_its_one_sided_bound(op, threshold, status):
    rule = VerdictRule(min_seeds=3, checks=[_mean_check(op, threshold)])
    _, outcomes = decide(rule, {"m": [1.0, 2.0, 3.0]})
    assert outcomes[0].status == status


def test_a_per_seed_check_and_a_mean_check_differ_on_the_same_values():
    """Every seed clears 0.5, so the per-seed check holds; the mean's bound (0.314) does not."""
    per_seed = VerdictRule(min_seeds=3, checks=[Check(name="m", metric="m", op=">=", threshold=0.5)])
    assert decide(per_seed, {"m": [1.0, 2.0, 3.0]})[0] == "reproduced"
    on_mean = VerdictRule(min_seeds=3, checks=[_mean_check(">=", 0.5)])
    assert decide(on_mean, {"m": [1.0, 2.0, 3.0]})[0] == "inconclusive"


def test_more_seeds_narrow_the_bound_to_a_decision():
    check = _mean_check(">=", 0.5)
    rule = VerdictRule(min_seeds=3, checks=[check])
    assert decide(rule, {"m": [1.0, 2.0, 3.0]})[1][0].status == "unclear"
    assert decide(rule, {"m": [1.0, 2.0, 3.0] * 3})[1][0].status == "holds"   # n 9: bound 2 - 1.86*0.866/3 = 1.46


def test_a_mean_check_with_a_missing_seed_cannot_hold():
    rule = VerdictRule(min_seeds=3, checks=[_mean_check(">=", 0.0)])
    assert decide(rule, {"m": [1.0, None, 3.0]})[1][0].status == "unclear"
    assert decide(rule, {"m": [None, float("nan"), None]})[1][0].status == "fails"
    assert decide(rule, {"m": [1.0, 2.0]})[1][0].status == "unclear"       # fewer seeds than the rule asks


def test_a_mean_check_is_refused_with_one_seed_and_a_bad_confidence():
    with pytest.raises(ValueError, match="min_seeds >= 2"):
        VerdictRule(min_seeds=1, checks=[_mean_check(">=", 0.0)])
    with pytest.raises(ValueError):
        _mean_check(">=", 0.0, confidence=0.4)


def test_a_mean_check_is_described_as_one_and_per_seed_rules_keep_their_words():
    rule = VerdictRule(min_seeds=3, checks=[_mean_check(">=", 0.5)])
    assert "mean over seeds of m >= 0.5 (one-sided 95% t bound)" in rule.describe()
    assert RULE.describe().startswith("each check must hold on every one of at least 3 seeds")
