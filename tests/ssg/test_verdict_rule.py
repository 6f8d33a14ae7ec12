"""The verdict rule of params.yaml on made-up results gives each verdict; the gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.ssg.config import load_report
from stages.ssg.report import CARD, verdict_metrics
from tests.conftest import ROOT


def made_up(per_seed: list[dict[str, float]]) -> tuple[pd.DataFrame, dict]:
    """Results and evaluation record from per-seed {arm: test FD, 'flops': DSE-SSG's FLOPs per image}."""
    rows = []
    for s, seed in enumerate(per_seed):
        for arm in ("none", "ssg_dse", "ssg_bilinear", "ssg_nearest", "temperature", "marginal"):
            rows.append({"seed_index": s, "split": "test", "arm": arm, "prior": "none", "beta": 0.0,
                         "temperature": 1.0, "fd": seed[arm], "precision": 0.5, "recall": 0.5})
    evaluation = {"n_seeds": len(per_seed),
                  "seeds": [{"cost": {"none": {"flops_per_image": 1000.0},
                                      "ssg_dse": {"flops_per_image": seed.get("flops", 1001.0)}}}
                            for seed in per_seed]}
    return pd.DataFrame(rows), evaluation


GOOD = {"none": 10.0, "ssg_dse": 8.0, "ssg_bilinear": 9.5, "ssg_nearest": 9.8, "temperature": 9.0,
        "marginal": 60.0}
BAD = {"none": 10.0, "ssg_dse": 10.5, "ssg_bilinear": 9.5, "ssg_nearest": 9.8, "temperature": 9.0,
       "marginal": 60.0, "flops": 3000.0}
MIXED = {**GOOD, "ssg_bilinear": 7.5}          # DSE helps, but a naive prior helps more
BROKEN_MODEL = {**GOOD, "marginal": 12.0}      # the model is barely better than token marginals


def verdict_of(seeds: list[dict]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    results, evaluation = made_up(seeds)
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(results, evaluation), seeds=list(range(len(seeds))),
                         profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([GOOD] * 3, "reproduced"),
    ([BAD] * 3, "not_reproduced"),
    ([MIXED] * 3, "partly"),
    ([GOOD, BAD, GOOD], "inconclusive"),        # seeds disagree on every claim
    ([BROKEN_MODEL] * 3, "inconclusive"),       # the gate fails: no claim is read
    ([GOOD] * 2, "inconclusive"),               # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_by_hand():
    results, evaluation = made_up([GOOD])
    vm = verdict_metrics(results, evaluation)
    assert vm["fd_none_over_marginal"] == pytest.approx([10 / 60])
    assert vm["dse_gain_over_none"] == pytest.approx([0.2])
    assert vm["dse_gain_over_temperature"] == pytest.approx([1 / 9])
    assert vm["dse_gain_over_best_naive"] == pytest.approx([1.5 / 9.5])
    assert vm["extra_flops_fraction"] == pytest.approx([0.001])
