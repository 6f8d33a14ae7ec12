"""The verdict rule of params.yaml on made-up results gives each verdict; the control gates the claims."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.biocap.config import load_report
from stages.biocap.report import CARD, gated_verdict, load_note, verdict_metrics
from stages.core.report import decide_claim
from tests.conftest import ROOT

ARMS = ["taxonomy", "caption_single", "caption_dual", "hallucinated", "shuffled"]


def results(per_seed: list[dict[str, dict[str, float]]]) -> pd.DataFrame:
    """Rows (arm, seed, metric, value); arms and metrics not given are 0.3."""
    rows = []
    for s, seed in enumerate(per_seed):
        for arm in ARMS:
            for metric in ("zero_shot_seen", "zero_shot_test_shift", "test_recall_at_5"):
                rows.append({"arm": arm, "seed_index": s, "metric": metric,
                             "value": seed.get(arm, {}).get(metric, 0.3)})
    return pd.DataFrame(rows)


COMPETENT = {"taxonomy": {"zero_shot_seen": 0.9}}
GOOD = {**COMPETENT, "caption_dual": {"zero_shot_test_shift": 0.5, "test_recall_at_5": 0.5}}
BAD = {**COMPETENT, "caption_dual": {"zero_shot_test_shift": 0.2, "test_recall_at_5": 0.2},
       "hallucinated": {"zero_shot_test_shift": 0.5}}
MIXED = {**COMPETENT, "caption_dual": {"zero_shot_test_shift": 0.2, "test_recall_at_5": 0.5}}
INCOMPETENT = {"taxonomy": {"zero_shot_seen": 0.1}, **{k: v for k, v in GOOD.items() if k != "taxonomy"}}


def verdict_of(seeds: list[dict]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(results(seeds)), seeds=list(range(len(seeds))),
                         profile="default", timings={})
    return gated_verdict(claim, cfg.positive_control).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([GOOD] * 3, "reproduced"),
    ([BAD] * 3, "not_reproduced"),
    ([MIXED] * 3, "partly"),
    ([GOOD, BAD, GOOD], "inconclusive"),
    ([INCOMPETENT] * 3, "inconclusive"),
    ([GOOD] * 2, "inconclusive"),
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_metrics_are_gains_over_the_taxonomy_arm_by_hand():
    vm = verdict_metrics(results([GOOD]))
    assert vm["seen_taxa_accuracy_taxonomy"] == [pytest.approx(0.9)]
    assert vm["shifted_zero_shot_gain_dual"] == [pytest.approx(0.2)]
    assert vm["retrieval_r5_gain_dual"] == [pytest.approx(0.2)]
    assert vm["shifted_zero_shot_gain_hallucinated"] == [pytest.approx(0.0)]


def test_a_failed_control_makes_every_claim_unclear():
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(results([INCOMPETENT] * 3)), seeds=[0, 1, 2],
                         profile="default", timings={})
    gated = gated_verdict(claim, cfg.positive_control)
    assert {o.status for o in gated.checks if o.name != cfg.positive_control} == {"unclear"}
    assert "positive control" in gated.verdict_rule


def test_the_wall_time_note_states_the_load_and_cpu_seconds_of_the_run():
    timings = {"train": {"wall_time_s": 500.0, "cpu_time_s": 480.0, "load_average_1min": 1.04},
               "features": {"wall_time_s": 150.0, "cpu_time_s": 170.0, "load_average_1min": 2.75}}
    assert load_note(timings) == ("the steps ended at 1-minute load averages 1.0 to 2.8, with 650 CPU seconds in "
                                  "650 s of wall time.")
    assert "before the runner recorded" in load_note({"train": {"wall_time_s": 500.0}})
