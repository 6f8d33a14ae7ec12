"""The verdict rule of params.yaml on made-up results gives each verdict; the gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.report import decide_claim
from stages.fga.config import load_report
from stages.fga.report import CARD, METHODS, gated_verdict, verdict_metrics
from tests.conftest import ROOT

SHIFTS = [("blur", 1), ("noise", 2)]


def made_up(per_seed: list[dict[str, float]]) -> tuple[pd.DataFrame, dict]:
    """Results and adaptation record from per-seed {method: shifted accuracy, 'clean': ..., 'ratio': ...}."""
    rows = []
    for s, seed in enumerate(per_seed):
        for m in METHODS:
            for kind, sev in SHIFTS:
                rows.append({"seed_index": s, "split": "test", "method": m, "kind": kind, "severity": sev,
                             "accuracy": seed.get(m, 0.6), "n_images": 10})
        for m in ("zero_shot", "coop", "sapt"):
            rows.append({"seed_index": s, "split": "test", "method": m, "kind": "clean", "severity": 0,
                         "accuracy": seed.get("clean", 0.8) if m == "zero_shot" else 0.8, "n_images": 10})
    adaptation = {"n_seeds": len(per_seed), "seeds": [{"sharpness_ratio": seed.get("ratio", 0.5),
                                                       "text_passes_fga_over_tpt": seed.get("cost", 0.01)}
                                                      for seed in per_seed]}
    return pd.DataFrame(rows), adaptation


GOOD = {"fga": 0.70, "fga_coop": 0.66, "tpt": 0.60, "zero": 0.62, "coop": 0.58, "sapt": 0.65, "ratio": 0.5}
BAD = {"fga": 0.55, "fga_coop": 0.62, "tpt": 0.60, "zero": 0.62, "coop": 0.58, "sapt": 0.65, "ratio": 1.2, "cost": 2.0}
MIXED = {**GOOD, "ratio": 1.2}
BROKEN_CLIP = {**GOOD, "clean": 0.15}
VIEWS_HURT = {**GOOD, "coop": 0.64}                 # voting over the views loses to the single image: gate fails


def verdict_of(seeds: list[dict]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    results, adaptation = made_up(seeds)
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(results, adaptation), seeds=list(range(len(seeds))),
                         profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([GOOD] * 3, "reproduced"),
    ([BAD] * 3, "not_reproduced"),
    ([MIXED] * 3, "partly"),
    ([GOOD, BAD, GOOD], "inconclusive"),        # seeds disagree on every claim
    ([BROKEN_CLIP] * 3, "inconclusive"),        # the CLIP gate fails: no claim is read
    ([VIEWS_HURT] * 3, "inconclusive"),         # the views gate fails: no claim is read
    ([GOOD] * 2, "inconclusive"),               # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_are_paired_differences_by_hand():
    results, adaptation = made_up([GOOD])
    vm = verdict_metrics(results, adaptation)
    assert vm["views_vote_minus_single"] == [pytest.approx(0.04)]     # zero − coop
    assert vm["fga_coop_minus_zero"] == [pytest.approx(0.04)]         # the selection alone, same prompt
    assert vm["fga_text_passes_over_tpt"] == [0.01]
    assert vm["fga_minus_tpt"] == [pytest.approx(0.10)]
    assert vm["fga_minus_zero"] == [pytest.approx(0.08)]
    assert vm["fga_minus_sapt"] == [pytest.approx(0.05)]
    assert vm["clean_zero_shot_accuracy"] == [pytest.approx(0.8)]
    assert vm["sharpness_ratio_sapt_over_coop"] == [0.5]


def test_a_trivial_method_cannot_pass():
    # FGA equal to its baselines (no selection effect, no flatness): every claim fails
    same = {"fga": 0.6, "fga_coop": 0.6, "tpt": 0.6, "zero": 0.6, "coop": 0.59, "sapt": 0.6, "ratio": 1.0, "cost": 1.0}
    assert verdict_of([same] * 3) == "not_reproduced"


def test_a_selection_that_is_zeros_rule_fails_the_selection_check():
    # lambda = 0 on every seed: fga_coop scores exactly Zero, so the selection check fails even if FGA beats Zero
    cfg = load_report(ROOT / "params.yaml")
    results, adaptation = made_up([{**GOOD, "fga_coop": GOOD["zero"]}] * 3)
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(results, adaptation), seeds=[0, 1, 2],
                         profile="default", timings={})
    status = {c.name: c.status for c in gated_verdict(claim, cfg.gates).checks}
    selection = next(c.name for c in cfg.verdict.checks if c.metric == "fga_coop_minus_zero")
    beats_zero = next(c.name for c in cfg.verdict.checks if c.metric == "fga_minus_zero")
    assert status[selection] == "fails" and status[beats_zero] == "holds"
