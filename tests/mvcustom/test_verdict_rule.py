"""The verdict rule of params.yaml on made-up results gives each verdict; a failed gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.mvcustom.config import load_report
from stages.mvcustom.report import ARMS, CARD, verdict_metrics
from tests.conftest import ROOT

WINDOW = 0.4
GOOD = {"plain": (0.020, 0.10, 0.60), "dfr_lcc": (0.019, 0.06, 0.61), "warp_only": (0.030, 0.05, 0.70)}
BAD = {"plain": (0.020, 0.10, 0.60), "dfr_lcc": (0.030, 0.12, 0.50), "warp_only": (0.025, 0.05, 0.70)}
MIXED = {"plain": (0.020, 0.10, 0.60), "dfr_lcc": (0.030, 0.06, 0.61), "warp_only": (0.030, 0.05, 0.70)}
FLOOR_WINS = {**GOOD, "warp_only": (0.010, 0.05, 0.70)}
POSE_BLIND = {**GOOD, "spec": {"plain": 1.0}}       # plain beats the floor but ignores its target poses


def made_up(per_seed: list[dict[str, tuple[float, float, float]]]) -> tuple[pd.DataFrame, dict]:
    """Test rows from per-seed {arm: (gt_mse, reproj_error, identity)} (and {"spec": {arm: pose specificity}},
    0.5 unless given); truths consistent, shuffled not."""
    rows = []
    for s, seed in enumerate(per_seed):
        for arm in ARMS:
            gt, rp, ident = seed.get(arm, (0.02, 0.10, 0.6))
            if arm == "ground_truth":
                gt, rp, ident = 0.0, 0.01, 0.9
            if arm == "shuffled_truth":
                gt, rp, ident = 0.03, 0.08, 0.9
            spec = {"ground_truth": 0.0, "shuffled_truth": 2.0, "pose_blind": 1.0, **seed.get("spec", {})}.get(arm, 0.5)
            window = WINDOW if arm in ("dfr", "lcc", "dfr_lcc") else 0.0
            rows.append({"split": "test", "subject": s, "window": window, "arm": arm, "gt_mse": gt,
                         "reproj_error": rp, "pose_accuracy": 0.5, "pose_specificity": spec, "identity": ident})
            if arm == "dfr_lcc":   # another window's rows must not be read
                rows.append({**rows[-1], "window": 0.2, "gt_mse": 0.9, "reproj_error": 0.9})
    return pd.DataFrame(rows), {"n_seeds": len(per_seed), "window": WINDOW}


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
    ([GOOD, BAD, GOOD], "inconclusive"),      # seeds disagree on every claim
    ([FLOOR_WINS] * 3, "inconclusive"),       # the gate fails: plain does not beat the warp-only floor
    ([POSE_BLIND] * 3, "inconclusive"),       # the pose gate fails: plain's views are pose-blind
    ([GOOD] * 2, "inconclusive"),             # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_by_hand():
    results, evaluation = made_up([GOOD])
    vm = verdict_metrics(results, evaluation)
    assert vm["gt_mse_warp_minus_plain"] == [pytest.approx(0.010)]
    assert vm["reproj_gt_over_shuffled"] == [pytest.approx(0.125)]
    assert vm["reproj_gain_dfr_lcc_over_plain"] == [pytest.approx(0.4)]
    assert vm["gt_mse_change_dfr_lcc_over_plain"] == [pytest.approx(-0.05)]
    assert vm["identity_dfr_lcc_minus_plain"] == [pytest.approx(0.01)]
    assert vm["gt_mse_warp_minus_dfr_lcc"] == [pytest.approx(0.011)]
    assert vm["pose_accuracy_plain"] == [0.5]
    assert vm["pose_specificity_plain"] == [0.5]
    assert vm["gt_mse_warp_minus_pose_blind"] == [pytest.approx(0.010)]


def test_a_method_equal_to_plain_cannot_pass():
    same = {**GOOD, "dfr_lcc": GOOD["plain"]}   # no consistency gain: the consistency claim fails
    assert verdict_of([same] * 3) == "partly"
    results, evaluation = made_up([same] * 3)
    assert verdict_metrics(results, evaluation)["reproj_gain_dfr_lcc_over_plain"] == [0.0] * 3


def test_the_pose_blind_control_cannot_pass_the_pose_gate():
    cfg = load_report(ROOT / "params.yaml")
    gate = next(c for c in cfg.verdict.checks if c.metric == "pose_specificity_plain")
    assert gate.name in cfg.gates and gate.op == "<=" and gate.threshold < 1.0   # a pose-blind output scores 1
    results, evaluation = made_up([GOOD])
    assert verdict_metrics(results, evaluation)["gt_mse_warp_minus_pose_blind"] == [pytest.approx(0.010)]
