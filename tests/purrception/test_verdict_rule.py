"""The verdict rule of params.yaml on made-up FID curves gives each verdict."""

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import PaperCard, decide_claim
from stages.purrception.config import load_report
from stages.purrception.report import verdict_metrics
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
                         rule.report.verdict_sampler, [known_bad] * len(seeds))
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
