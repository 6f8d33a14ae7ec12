"""The paper's own verdict rule (from params.yaml) with its positive controls, on made-up metrics."""

from pathlib import Path

import pytest

from stages.espo.config import load_report
from stages.espo.report import cpu_per_iteration, gated_decide, seeds_needed

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"sudoku_best_minus_warmstart_success": [0.3] * 3, "sudoku_token_elbo_clip_fraction": [0.1] * 3,
        "sudoku_espo_minus_d1_success": [0.3] * 3, "sudoku_espo_minus_token_elbo_success": [0.2] * 3,
        "sudoku_espo_minus_warmstart_success": [0.3] * 3}
CLAIMS = ("sudoku_espo_minus_d1_success", "sudoku_espo_minus_token_elbo_success",
          "sudoku_espo_minus_warmstart_success")


@pytest.mark.parametrize(("edits", "expected"), [
    ({}, "reproduced"),
    ({"sudoku_espo_minus_d1_success": [0.0] * 3}, "partly"),
    ({k: [-0.05] * 3 for k in CLAIMS}, "not_reproduced"),              # gates hold, every claim fails
    ({k: [0.1, -0.05, 0.1] for k in CLAIMS}, "inconclusive"),          # gates hold, seeds disagree
    ({"sudoku_token_elbo_clip_fraction": [0.001] * 3}, "inconclusive"),  # ratios stay at 1: claims do not count
    ({"sudoku_best_minus_warmstart_success": [0.0, 0.1, 0.1]}, "inconclusive"),
    ({"sudoku_best_minus_warmstart_success": [0.0] * 3, **{k: [-0.1] * 3 for k in CLAIMS}}, "inconclusive"),
    ({"sudoku_espo_minus_d1_success": [0.3] * 2}, "partly"),           # too few seeds for one claim
])
def test_rule_gives_each_verdict(edits, expected):
    cfg = load_report(ROOT / "params.yaml")
    verdict, outcomes = gated_decide(cfg.verdict, {**GOOD, **edits}, cfg.report.gates)
    assert verdict == expected
    gates_hold = all(o.status == "holds" for o in outcomes if o.name.endswith("(positive control)"))
    if not gates_hold:   # a failed positive control leaves every claim check unclear
        assert {o.status for o in outcomes if not o.name.endswith("(positive control)")} == {"unclear"}


def test_gates_are_checks_of_the_rule():
    cfg = load_report(ROOT / "params.yaml")
    assert set(cfg.report.gates) <= {c.metric for c in cfg.verdict.checks}
    assert set(cfg.report.gates) < {c.metric for c in cfg.verdict.checks}   # and there is a claim to gate


def test_seeds_needed_hand_computed():
    # std 0.1 (ddof 1) at margin 0.05: (1.96·0.1/0.05)² = 15.37 → 16
    assert seeds_needed([0.0, 0.1, 0.2], 0.05) == 16
    assert seeds_needed([0.1], 0.05) is None


def test_rl_cost_per_iteration_is_cpu_seconds_over_runs_and_iterations():
    assert cpu_per_iteration({"cpu_time_s": 1254.4, "wall_time_s": 1259.2}, 9, 100) == pytest.approx(1.3938, abs=1e-4)
    assert cpu_per_iteration({"wall_time_s": 1259.2}, 9, 100) is None  # a timing from before CPU seconds
