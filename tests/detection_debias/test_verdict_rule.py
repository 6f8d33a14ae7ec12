"""The verdict rule of params.yaml on made-up AP tables gives each verdict; a failing gate closes every claim."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.detection_debias.config import ARMS, load_report
from stages.detection_debias.families import families
from stages.detection_debias.report import CARD, verdict_metrics
from tests.conftest import ROOT

# per arm: (overall mAP, AP of under-represented groups other than low-diversity, AP of low-diversity, unplanted AP);
# "rank_low": whether RS ranks the low-diversity groups lowest; "layout": the baseline detector's mAP on generated
# and on procedural images of the test layouts (the generator's layout accuracy)
GOOD = {"none": (0.5, 0.30, 0.30, 0.60), "reused": (0.52, 0.35, 0.45, 0.6),
        "inverse_frequency": (0.55, 0.45, 0.35, 0.6),
        "rs": (0.56, 0.47, 0.55, 0.6), "rs_procedural": (0.6, 0.5, 0.6, 0.6), "rank_low": True, "layout": (0.3, 0.4)}
BAD = {"none": (0.5, 0.45, 0.45, 0.60), "reused": (0.5, 0.45, 0.45, 0.6), "inverse_frequency": (0.55, 0.5, 0.5, 0.6),
       "rs": (0.40, 0.40, 0.40, 0.6), "rs_procedural": (0.5, 0.5, 0.5, 0.6), "rank_low": False, "layout": (0.3, 0.4)}
MIXED = {**GOOD, "rs": (0.40, 0.47, 0.55, 0.6)}         # better on the groups, loses overall mAP
BROKEN = {**GOOD, "none": (0.02, 0.01, 0.01, 0.03)}      # the baseline detects nothing: the gate fails
NO_GAP = {**GOOD, "none": (0.5, 0.60, 0.60, 0.60)}       # the planted groups are not under-served: the gate fails
BLOBS = {**GOOD, "layout": (0.01, 0.4)}                  # the generator draws nothing the detector finds: gate fails


def fams() -> dict[str, list[int]]:
    d = load_report(ROOT / "params.yaml").data
    return families(d.bins(), d.rare_class, d.rare_position_class, d.low_diversity_class, d.low_diversity_size)


def made_up(seeds: list[dict]) -> tuple[pd.DataFrame, pd.DataFrame, list[dict]]:
    """AP rows per (seed, arm, test, group), per-group RS and the layout accuracy carrying each seed's values."""
    fam = fams()
    n_groups = load_report(ROOT / "params.yaml").data.bins().n_groups
    ap_rows, group_rows = [], []
    for s, seed in enumerate(seeds):
        for arm in ARMS:
            overall, under, low, unplanted = seed[arm]
            ap_rows.append({"seed_index": s, "arm": arm, "split": "test", "group": -1, "ap": overall})
            for g in range(n_groups):
                ap = low if g in fam["low_diversity"] else under if g in fam["under_represented"] else unplanted
                ap_rows.append({"seed_index": s, "arm": arm, "split": "test", "group": g, "ap": ap})
        for g in range(n_groups):
            rs = (0.0 if seed["rank_low"] else 2.0) if g in fam["low_diversity"] else 1.0
            freq = 2.0 if g in fam["low_diversity"] else 1.0       # frequent under the frequency term
            group_rows.append({"seed_index": s, "group": g, "rs": rs, "frequency": freq})
    accuracy = [{"seed_index": s, "split": "test", "generated": seed["layout"][0], "procedural": seed["layout"][1]}
                for s, seed in enumerate(seeds)]
    return pd.DataFrame(ap_rows), pd.DataFrame(group_rows), accuracy


def metrics_of(seeds: list[dict]) -> dict[str, list[float]]:
    ap, groups, accuracy = made_up(seeds)
    return verdict_metrics(ap, groups, fams(), len(seeds), accuracy)


def verdict_of(seeds: list[dict]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, metrics_of(seeds), seeds=list(range(len(seeds))), profile="default",
                         timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([GOOD] * 3, "reproduced"),
    ([BAD] * 3, "not_reproduced"),
    ([MIXED] * 3, "partly"),
    ([GOOD, BAD, GOOD], "inconclusive"),     # seeds disagree on every claim
    ([BROKEN] * 3, "inconclusive"),          # the competence gate fails: no claim is read
    ([NO_GAP] * 3, "inconclusive"),          # nothing planted to debias: no claim is read
    ([BLOBS] * 3, "inconclusive"),           # the generator fails its layout-accuracy gate: no claim is read
    ([GOOD] * 2, "inconclusive"),            # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_by_hand():
    fam = fams()
    vm = metrics_of([GOOD])
    n_low = len(fam["low_diversity"])
    n_under = len(fam["under_represented"])
    under = {arm: ((n_under - n_low) * GOOD[arm][1] + n_low * GOOD[arm][2]) / n_under for arm in ARMS}
    assert vm["baseline_map"] == [0.5]
    assert vm["generated_layout_map_ratio"] == [pytest.approx(0.75)]
    assert vm["baseline_gap_unplanted_minus_underrep"] == [pytest.approx(0.6 - under["none"])]
    assert vm["rs_minus_invfreq_lowdiv"] == [pytest.approx(0.20)]
    assert vm["rs_minus_invfreq_underrep"] == [pytest.approx(under["rs"] - under["inverse_frequency"])]
    assert vm["rs_minus_invfreq_overall"] == [pytest.approx(0.01)]
    assert vm["rs_minus_none_underrep"] == [pytest.approx(under["rs"] - under["none"])]
    top = 1 - len(fam["low_diversity"]) / 24      # the frequency term ranks them above every other group
    assert vm["rs_lowdiv_rank_drop"] == [pytest.approx(top)]
    assert metrics_of([BAD])["rs_lowdiv_rank_drop"] == [0.0]


def test_families_partition_the_groups():
    fam = fams()
    assert sorted(fam["under_represented"] + fam["unplanted"]) == list(range(24))
    assert len(fam["low_diversity"]) == 2 and len(fam["rare_class"]) == 6 and len(fam["large"]) == 8
    assert len(fam["rare_position"]) == 3
    assert not set(fam["low_diversity"]) & set(fam["rare_class"])
    assert np.isin(fam["low_diversity"], fam["under_represented"]).all()
