"""The verdict rule of params.yaml on made-up scores gives each verdict; a failing gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.m3cotbench.config import load_report
from stages.m3cotbench.expectations import MODELS
from stages.m3cotbench.report import CARD, verdict_metrics
from stages.m3cotbench.scene import TASKS
from tests.conftest import ROOT

# per model: (accuracy, step F1, consistency), the same on every task except the CoT accuracy on size_grade
GOOD = {"rule_based": (1.0, 0.98, 0.98), "unfaithful": (1.0, 0.01, 0.4), "shortcut": (1.0, 0.0, 1.0),
        "direct": (0.8, 0.0, 1.0), "cot": (0.8, 0.8, 0.6), "cot_shuffled": (0.8, 0.3, 0.6), "hurt": 0.6}
BAD = {**GOOD, "unfaithful": (1.0, 0.9, 0.95), "cot_shuffled": (0.8, 0.75, 0.6), "hurt": 0.9}
MIXED = {**GOOD, "hurt": 0.9}                                  # separation holds, CoT does not hurt
BROKEN_MODELS = {**GOOD, "direct": (0.3, 0.0, 1.0)}            # the trained models near chance: the gate fails


def made_up(seeds: list[dict]) -> pd.DataFrame:
    """One scored item per (seed, model, task) carrying the seed's values."""
    rows = []
    for s, seed in enumerate(seeds):
        for m in MODELS:
            acc, f1, cons = seed[m]
            for task in TASKS:
                c = seed["hurt"] if (m == "cot" and task == "size_grade") else acc
                rows.append({"seed_index": s, "model": m, "scan": 0, "task": task, "level": 1, "correct": c,
                             "precision": f1, "recall": f1, "f1": f1, "n_steps": 1, "n_matched": 1, "tokens": 5,
                             "consistency": cons})
    return pd.DataFrame(rows)


def verdict_of(seeds: list[dict], matcher_accuracy: float = 0.99) -> str:
    cfg = load_report(ROOT / "params.yaml")
    per_seed = verdict_metrics(made_up(seeds), {"test_accuracy": matcher_accuracy}, len(seeds), cfg.cot_hurts_tasks)
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(len(seeds))), profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("seeds", "matcher", "expected"), [
    ([GOOD] * 3, 0.99, "reproduced"),
    ([BAD] * 3, 0.99, "not_reproduced"),
    ([MIXED] * 3, 0.99, "partly"),
    ([GOOD, BAD, GOOD], 0.99, "inconclusive"),     # seeds disagree on every claim
    ([BROKEN_MODELS] * 3, 0.99, "inconclusive"),   # a gate fails: no claim is read
    ([GOOD] * 3, 0.6, "inconclusive"),             # the matcher gate fails
    ([GOOD] * 2, 0.99, "inconclusive"),            # too few seeds
])
def test_each_verdict(seeds, matcher, expected):
    assert verdict_of(seeds, matcher) == expected


def test_verdict_metrics_by_hand():
    cfg = load_report(ROOT / "params.yaml")
    vm = verdict_metrics(made_up([GOOD]), {"test_accuracy": 0.95}, 1, cfg.cot_hurts_tasks)
    assert vm["f1_faithful_minus_unfaithful"] == [pytest.approx(0.97)]
    assert vm["f1_cot_minus_cot_shuffled"] == [pytest.approx(0.5)]
    assert vm["consistency_faithful_minus_unfaithful"] == [pytest.approx(0.58)]
    assert vm["cot_impact_on_preregistered_tasks"] == [pytest.approx(-0.2)]
    assert vm["accuracy_gap_faithful_unfaithful"] == [0.0]
    assert vm["matcher_test_accuracy"] == [0.95]
    chance = sum(1 / len(a) for _, a in TASKS.values()) / len(TASKS)
    cot_acc = (0.8 * 5 + 0.6) / 6
    assert vm["trained_min_gain_over_chance"] == [pytest.approx(min(0.8, cot_acc) - chance)]


def test_a_shortcut_cannot_pass_the_separation_checks():
    """The shortcut answers perfectly with no steps: as the 'faithful' side it would give F1 0."""
    scores = made_up([GOOD])
    cfg = load_report(ROOT / "params.yaml")
    swapped = scores.copy()
    swapped.loc[swapped.model == "rule_based", ["f1", "precision", "recall"]] = 0.0
    vm = verdict_metrics(swapped, {"test_accuracy": 0.99}, 1, cfg.cot_hurts_tasks)
    assert vm["f1_faithful_minus_unfaithful"][0] < 0.5
