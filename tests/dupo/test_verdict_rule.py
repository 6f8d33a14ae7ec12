"""The paper's own verdict rule (params.yaml) with its gates gives each of the four verdicts on made-up metrics."""

from pathlib import Path

import pytest

from stages.dupo.config import load_report
from stages.dupo.report import gated_decide, rerank_minus_greedy, seeds_needed

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"sft_primal_accuracy_low": [0.4] * 3, "sft_primal_accuracy_high": [0.4] * 3, "sft_dual_accuracy": [0.8] * 3,
        "dupo_minus_sft": [0.1] * 3, "dupo_gain_minus_fraction_of_oracle_gain": [0.02] * 3,
        "dupo_minus_nofilter": [0.05] * 3, "dual_minus_majority_at_8": [0.05] * 3, "dupo_minus_random": [0.05] * 3,
        "dual_minus_reachable_at_8": [0.05] * 3}
CLAIMS = ("dupo_minus_sft", "dupo_gain_minus_fraction_of_oracle_gain", "dupo_minus_nofilter",
          "dual_minus_majority_at_8", "dupo_minus_random", "dual_minus_reachable_at_8")


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"dupo_minus_nofilter": [-0.01] * 3}, "partly"),
    ({k: [-0.1] * 3 for k in CLAIMS}, "not_reproduced"),
    ({k: [0.1, -0.1, 0.1] for k in CLAIMS}, "inconclusive"),                 # gates hold, seeds disagree
    ({"sft_primal_accuracy_low": [0.1] * 3}, "inconclusive"),                # SFT too weak for RL to learn from
    ({"sft_primal_accuracy_high": [0.8] * 3}, "inconclusive"),               # SFT leaves no room
    ({"sft_dual_accuracy": [0.5] * 3, **{k: [-0.1] * 3 for k in CLAIMS}}, "inconclusive"),  # dual too weak
    ({"dupo_minus_sft": [0.1] * 2}, "partly"),                               # too few seeds for one claim
    ({"dupo_minus_random": [0.0] * 3}, "partly"),    # DuPO no better than a coin: the gain is not the reward's
    ({"dual_minus_reachable_at_8": [0.0] * 3}, "partly"),   # the filter alone reranks as well as the dual
])
def test_rule_gives_each_verdict(edits, expected):
    cfg = load_report(ROOT / "params.yaml")
    verdict, outcomes = gated_decide(cfg.verdict, {**GOOD, **edits}, cfg.report.gates)
    assert verdict == expected
    gates = [o for o, c in zip(outcomes, cfg.verdict.checks, strict=True) if c.metric in cfg.report.gates]
    if not all(o.status == "holds" for o in gates):
        assert {o.status for o, c in zip(outcomes, cfg.verdict.checks, strict=True)
                if c.metric not in cfg.report.gates} == {"unclear"}


def test_every_check_can_pass_and_fail():
    cfg = load_report(ROOT / "params.yaml")
    for check in cfg.verdict.checks:
        assert check.passes(check.threshold) and not check.passes(
            check.threshold + (-0.01 if check.op == ">=" else 0.01))


def test_gates_are_checks_of_the_rule():
    cfg = load_report(ROOT / "params.yaml")
    assert set(cfg.report.gates) < {c.metric for c in cfg.verdict.checks}
    assert cfg.verdict.min_seeds >= 3


def test_missing_metric_is_an_error():
    cfg = load_report(ROOT / "params.yaml")
    with pytest.raises(KeyError, match="dual_minus_majority_at_8"):
        gated_decide(cfg.verdict, {k: v for k, v in GOOD.items() if k != "dual_minus_majority_at_8"},
                     cfg.report.gates)


def test_seeds_needed_hand_computed():
    # mean 0.1, s = 0.1: the interval must exclude the threshold 0.05, |mean − thr| = 0.05
    assert seeds_needed([0.0, 0.1, 0.2], 0.05) == 16     # (1.96 · 0.1 / 0.05)² = 15.4
    assert seeds_needed([0.0, 0.1, 0.2], 0.0) == 4       # (1.96 · 0.1 / 0.1)² = 3.8
    assert seeds_needed([0.0, 0.1, 0.2], 0.15) == 16     # a mean below the threshold counts the same way
    assert seeds_needed([0.04, 0.05, 0.06], 0.05) is None  # mean on the threshold: no number of seeds
    assert seeds_needed([0.1], 0.05) is None


def test_rerank_minus_greedy_pairs_each_seed_at_its_n():
    rerank = {"ns": [1, 8], "sft_greedy": 0.5,
              "per_seed": [{"dual": [0.4, 0.6]}, {"dual": [0.45, 0.49]}]}
    assert rerank_minus_greedy(rerank, 8) == pytest.approx([0.1, -0.01])
    assert rerank_minus_greedy(rerank, 1) == pytest.approx([-0.1, -0.05])
