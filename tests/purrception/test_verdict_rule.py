"""The verdict rule of params.yaml on made-up FID curves gives each verdict."""

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import PaperCard, decide_claim
from stages.purrception.config import load_report
from stages.purrception.report import speed_target, verdict_metrics
from tests.conftest import ROOT

STEPS = [100, 200, 300, 400]
METHODS = ["purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm"]
SAMPLER = {"purrception": "stochastic", "cfm_velocity": "deterministic", "cfm_endpoint": "deterministic",
           "discrete_fm": "stochastic"}
CARD = PaperCard("purrception", "t", "c", "r")


def _curves(fids_by_seed: list[dict[str, list[float]]], other: dict[str, list[float]] | None = None) -> pd.DataFrame:
    """Rows at τ = 1; ``other`` is Purrception's deterministic curve (the same as stochastic unless given)."""
    rows = []
    for s, fids in enumerate(fids_by_seed):
        arms = [(m, SAMPLER[m], curve) for m, curve in fids.items()]
        arms.append(("purrception", "deterministic", (other or fids)["purrception"]))
        for m, smp, curve in arms:
            rows += [{"method": m, "sampler": smp, "seed_index": s, "step": step, "temperature": 1.0, "fid": f,
                      "precision": 0.5, "recall": 0.5} for step, f in zip(STEPS, curve, strict=True)]
    return pd.DataFrame(rows)


FAST_AND_GOOD = {"purrception": [20, 8, 6, 5], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                 "discrete_fm": [30, 20, 9, 5.5]}
SLOW_AND_BAD = {"purrception": [60, 50, 40, 30], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                "discrete_fm": [30, 10, 7, 5.5]}
FAST_BUT_WORSE = {"purrception": [20, 8, 7.3, 7.2], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                  "discrete_fm": [30, 20, 9, 6.5]}
NOTHING_LEARNS = {m: [95, 96, 94, 95] for m in METHODS}


def _verdict(seeds: list[dict[str, list[float]]], known_bad: float = 100.0) -> str:
    rule = load_report(ROOT / "params.yaml")
    vm = verdict_metrics(_curves(seeds), METHODS, len(seeds), rule.report.target_fid_factor,
                         rule.report.verdict_sampler, [known_bad] * len(seeds), rule.report.speed_target)
    claim = decide_claim(CARD, rule.verdict, vm["per_seed"], seeds=list(range(len(seeds))), profile="default",
                         timings={})
    return gated_verdict(claim, rule.report.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([FAST_AND_GOOD] * 3, "reproduced"),
    ([SLOW_AND_BAD] * 3, "not_reproduced"),
    ([FAST_BUT_WORSE] * 3, "partly"),
    ([FAST_AND_GOOD, FAST_AND_GOOD, SLOW_AND_BAD], "inconclusive"),
    ([FAST_AND_GOOD] * 2, "inconclusive"),  # fewer seeds than the rule asks for
])
def test_each_verdict(seeds, expected):
    assert _verdict(seeds) == expected


def test_the_gate_makes_a_winning_method_inconclusive_when_no_baseline_learns():
    # Purrception "wins" against baselines that never beat the known-bad generator: no claim can be read
    winning = {**NOTHING_LEARNS, "purrception": [20, 8, 6, 5]}
    assert _verdict([winning] * 3) == "inconclusive"
    assert _verdict([FAST_AND_GOOD] * 3, known_bad=8.0) == "inconclusive"


def test_never_reaching_the_target_counts_as_one_interval_past_training():
    slow = {**FAST_AND_GOOD, "purrception": [60, 50, 40, 30]}
    vm = verdict_metrics(_curves([slow]), METHODS, 1, 1.25, "stochastic", [100.0])
    assert vm["never"] == 500
    assert vm["reach"]["cfm_velocity"]["purrception"] == [500]
    assert vm["per_seed"]["speedup_vs_cfm_velocity"] == [pytest.approx(400 / 500)]


def test_metrics_of_one_seed_by_hand():
    vm = verdict_metrics(_curves([FAST_AND_GOOD]), METHODS, 1, 1.25, "stochastic", [50.0])
    # each baseline's own target: 1.25 × its best FID
    assert vm["targets"] == {"cfm_velocity": [pytest.approx(7.5)], "cfm_endpoint": [pytest.approx(7.5)],
                             "discrete_fm": [pytest.approx(6.875)]}
    # velocity reaches 7.5 at 400, Purrception at 300; discrete reaches 6.875 at 400, Purrception at 300
    assert vm["reach"]["cfm_velocity"] == {"baseline": [400], "purrception": [300]}
    assert vm["reach"]["discrete_fm"] == {"baseline": [400], "purrception": [300]}
    assert vm["per_seed"] == {"best_baseline_fid_over_marginal": [pytest.approx(5.5 / 50)],
                              "final_fid_ratio": [pytest.approx(5 / 5.5)],
                              "speedup_vs_cfm_velocity": [pytest.approx(4 / 3)],
                              "speedup_vs_cfm_endpoint": [pytest.approx(4 / 3)],
                              "speedup_vs_discrete_fm": [pytest.approx(4 / 3)]}


def test_the_verdict_reads_the_sampler_it_names():
    slow_det = {**FAST_AND_GOOD, "purrception": [60, 50, 40, 30]}
    curves = _curves([FAST_AND_GOOD], other=slow_det)
    sto = verdict_metrics(curves, METHODS, 1, 1.25, "stochastic", [50.0])
    det = verdict_metrics(curves, METHODS, 1, 1.25, "deterministic", [50.0])
    assert sto["per_seed"]["speedup_vs_discrete_fm"] == [pytest.approx(4 / 3)]
    assert det["per_seed"]["speedup_vs_discrete_fm"] == [pytest.approx(400 / 500)]


def test_speed_targets_by_hand():
    flat, improving = [160.0, 158.0, 159.0], [300.0, 150.0, 90.0]
    assert speed_target(flat, improving, 1.25, "baseline_best") == pytest.approx(197.5)
    assert speed_target(flat, improving, 1.25, "pair_worse_best") == pytest.approx(197.5)  # the baseline's is worse
    assert speed_target([300.0, 100.0, 60.0], improving, 1.25, "baseline_best") == pytest.approx(75.0)
    assert speed_target([300.0, 100.0, 60.0], improving, 1.25, "pair_worse_best") == pytest.approx(112.5)
    with pytest.raises(ValueError, match="unknown speed target"):
        speed_target(flat, improving, 1.25, "final")


def test_the_pair_target_is_reached_by_both_runs_so_no_never_enters_the_speedup():
    # discrete FM ends far ahead: its own best × 1.25 = 6.875 is never reached by Purrception (best 30)
    slow = {**FAST_AND_GOOD, "purrception": [60, 50, 40, 30]}
    own = verdict_metrics(_curves([slow]), METHODS, 1, 1.25, "stochastic", [100.0], "baseline_best")
    pair = verdict_metrics(_curves([slow]), METHODS, 1, 1.25, "stochastic", [100.0], "pair_worse_best")
    assert own["reach"]["discrete_fm"]["purrception"] == [own["never"]]
    # pair: 1.25 × max(5.5, 30) = 37.5; discrete FM at 100 (30), Purrception at 400 (30)
    assert pair["targets"]["discrete_fm"] == [pytest.approx(37.5)]
    assert pair["reach"]["discrete_fm"] == {"baseline": [100], "purrception": [400]}
    assert pair["per_seed"]["speedup_vs_discrete_fm"] == [pytest.approx(0.25)]


@pytest.mark.parametrize("kind", ["baseline_best", "pair_worse_best"])
def test_a_flat_purrception_cannot_pass_and_a_better_one_can_pass_against_a_flat_baseline(kind):
    # a baseline flat from the first checkpoint: only a checkpoint earlier than its plateau can show a speedup
    flat = [160.0, 158.0, 159.0, 160.0]
    broken = {m: flat for m in METHODS}
    vm = verdict_metrics(_curves([broken]), METHODS, 1, 1.25, "stochastic", [100.0], kind)
    assert all(v == [pytest.approx(1.0)] for k, v in vm["per_seed"].items() if k.startswith("speedup"))
    # a baseline that plateaus after the first checkpoint, a Purrception already there at it: speedup 2
    early = {**broken, "cfm_velocity": [400.0, 158.0, 159.0, 160.0], "purrception": [190.0, 120.0, 90.0, 80.0]}
    vm = verdict_metrics(_curves([early]), METHODS, 1, 1.25, "stochastic", [100.0], kind)
    assert vm["per_seed"]["speedup_vs_cfm_velocity"] == [pytest.approx(2.0)]
    # and a slower Purrception fails against the same baseline
    late = {**early, "purrception": [400.0, 390.0, 150.0, 80.0]}
    vm = verdict_metrics(_curves([late]), METHODS, 1, 1.25, "stochastic", [100.0], kind)
    assert vm["per_seed"]["speedup_vs_cfm_velocity"] == [pytest.approx(200 / 300)]
