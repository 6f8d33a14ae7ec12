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
    adaptation = {"n_seeds": len(per_seed), "seeds": [{"sharpness_ratio": seed.get("ratio", 0.5)}
                                                      for seed in per_seed]}
    return pd.DataFrame(rows), adaptation


GOOD = {"fga": 0.70, "tpt": 0.60, "zero": 0.62, "sapt": 0.65, "ratio": 0.5}
BAD = {"fga": 0.55, "tpt": 0.60, "zero": 0.62, "sapt": 0.65, "ratio": 1.2}
MIXED = {"fga": 0.70, "tpt": 0.60, "zero": 0.62, "sapt": 0.65, "ratio": 1.2}
BROKEN_CLIP = {**GOOD, "clean": 0.15}


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
    ([BROKEN_CLIP] * 3, "inconclusive"),        # the gate fails: no claim is read
    ([GOOD] * 2, "inconclusive"),               # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_are_paired_differences_by_hand():
    results, adaptation = made_up([GOOD])
    vm = verdict_metrics(results, adaptation)
    assert vm["fga_minus_tpt"] == [pytest.approx(0.10)]
    assert vm["fga_minus_zero"] == [pytest.approx(0.08)]
    assert vm["fga_minus_sapt"] == [pytest.approx(0.05)]
    assert vm["clean_zero_shot_accuracy"] == [pytest.approx(0.8)]
    assert vm["sharpness_ratio_sapt_over_coop"] == [0.5]


def test_a_trivial_method_cannot_pass():
    # FGA equal to its baselines (no selection effect, no flatness): every claim fails
    same = {"fga": 0.6, "tpt": 0.6, "zero": 0.6, "sapt": 0.6, "ratio": 1.0}
    assert verdict_of([same] * 3) == "not_reproduced"
