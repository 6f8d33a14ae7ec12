"""The verdict rule of params.yaml on made-up FID curves gives each verdict."""

import pandas as pd
import pytest

from stages.core.verdict import decide
from stages.purrception.config import load_report
from stages.purrception.report import verdict_metrics
from tests.conftest import ROOT

STEPS = [100, 200, 400, 800]
METHODS = ["purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm"]


def _curves(fids_by_seed: list[dict[str, list[float]]]) -> pd.DataFrame:
    rows = [{"method": m, "seed_index": s, "step": step, "temperature": 1.0, "fid": f, "precision": 0.5,
             "recall": 0.5}
            for s, fids in enumerate(fids_by_seed) for m, curve in fids.items()
            for step, f in zip(STEPS, curve, strict=True)]
    return pd.DataFrame(rows)


FAST_AND_GOOD = {"purrception": [20, 8, 6, 5], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                 "discrete_fm": [30, 20, 9, 5.5]}
SLOW_AND_BAD = {"purrception": [60, 50, 40, 30], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                "discrete_fm": [30, 10, 7, 5.5]}
FAST_BUT_WORSE = {"purrception": [20, 8, 7.3, 7.2], "cfm_velocity": [40, 30, 12, 6], "cfm_endpoint": [40, 25, 10, 6],
                  "discrete_fm": [30, 20, 9, 6.5]}


@pytest.mark.parametrize(("seeds", "expected"), [
    ([FAST_AND_GOOD, FAST_AND_GOOD], "reproduced"),
    ([SLOW_AND_BAD, SLOW_AND_BAD], "not_reproduced"),
    ([FAST_BUT_WORSE, FAST_BUT_WORSE], "partly"),
    ([FAST_AND_GOOD, SLOW_AND_BAD], "inconclusive"),
])
def test_each_verdict(seeds, expected):
    rule = load_report(ROOT / "params.yaml")
    vm = verdict_metrics(_curves(seeds), METHODS, len(seeds), rule.speed.target_fid_factor)
    verdict, _ = decide(rule.verdict, vm["per_seed"])
    assert verdict == expected


def test_never_reaching_the_target_counts_as_one_step_past_training():
    slow = {**FAST_AND_GOOD, "purrception": [60, 50, 40, 30]}
    vm = verdict_metrics(_curves([slow]), METHODS, 1, 1.25)
    assert vm["steps_to_target"]["purrception"] == [801]
    assert vm["per_seed"]["steps_saved_vs_continuous"] == [-1]


def test_metrics_of_one_seed_by_hand():
    vm = verdict_metrics(_curves([FAST_AND_GOOD]), METHODS, 1, 1.25)
    # best baseline final FID = 5.5 (discrete FM); target 6.875: purrception at 400, the others at 800
    assert vm["targets"] == [pytest.approx(6.875)]
    assert vm["steps_to_target"]["purrception"] == [400] and vm["steps_to_target"]["cfm_velocity"] == [800]
    assert vm["per_seed"] == {"steps_saved_vs_continuous": [400], "steps_saved_vs_discrete": [400],
                              "final_fid_ratio": [pytest.approx(5 / 5.5)]}
