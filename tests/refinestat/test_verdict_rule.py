"""The verdict rule of params.yaml on made-up program tables gives each verdict; a failing gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.gates import gated_verdict
from stages.core.report import decide_claim
from stages.refinestat.config import METHODS, load_report
from stages.refinestat.report import CARD, null_rows, returned_program, verdict_metrics
from stages.refinestat.tasks import TASKS as TASK_SPECS
from tests.conftest import ROOT

TASKS = ["eight_schools", "dugongs", "diabetes"]
# per arm: (runnable attempts of 4, score of runnable ones, predictive of runnable ones); expert/control: (score, pred)
GOOD = {"unconstrained": (0, 0, 0.0), "syntax": (1, 5, -2.0), "refinestat": (3, 6, -1.1),
        "expert": (7, -1.0), "misspecified": (3, -1.5), "null": (7, -1.3), "scripted": True}
BAD = {**GOOD, "unconstrained": (3, 5, -1.0), "syntax": (4, 5, -1.0), "refinestat": (1, 5, -3.0)}
MIXED = {**GOOD, "refinestat": (3, 6, -3.0)}                 # runs more, fits worse than the expert
BROKEN_EXPERT = {**GOOD, "expert": (2, -1.0)}                 # the positive control fails
BROKEN_SCRIPT = {**GOOD, "scripted": False}                   # the constrained loop fails its scripted control


def made_up(seeds: list[dict]) -> pd.DataFrame:
    rows = []
    for s, seed in enumerate(seeds):
        for task in TASKS:
            for arm in ("expert", "misspecified", "null"):
                score, pred = seed[arm]
                rows.append({"seed_index": s, "task": task, "arm": arm, "attempt": 0, "runnable": True,
                             "score": score, "predictive": pred, "program": ""})
            expert = "\n".join(TASK_SPECS[task].expert)
            rows.append({"seed_index": s, "task": task, "arm": "scripted_refinestat", "attempt": 0, "runnable": True,
                         "score": 7, "predictive": -1.0, "program": expert if seed["scripted"] else "x = 1"})
            for m in METHODS:
                n_ok, score, pred = seed[m]
                for k in range(4):
                    ok = k < n_ok
                    rows.append({"seed_index": s, "task": task, "arm": m, "attempt": k, "runnable": ok,
                                 "score": score if ok else -1, "predictive": pred if ok else None, "program": ""})
    return pd.DataFrame(rows)


def verdict_of(seeds: list[dict]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    per_seed = verdict_metrics(made_up(seeds), len(seeds), cfg.report.heldout_tolerance, cfg.report.null_margin)
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(len(seeds))), profile="default", timings={})
    return gated_verdict(claim, cfg.report.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    ([GOOD] * 3, "reproduced"),
    ([BAD] * 3, "not_reproduced"),
    ([MIXED] * 3, "partly"),
    ([GOOD, BAD, GOOD], "inconclusive"),          # seeds disagree on every claim
    ([BROKEN_EXPERT] * 3, "inconclusive"),        # a gate fails: no claim is read
    ([BROKEN_SCRIPT] * 3, "inconclusive"),        # the scripted positive control fails: no claim is read
    ([GOOD] * 2, "inconclusive"),                 # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_verdict_metrics_by_hand():
    vm = verdict_metrics(made_up([GOOD]), 1, 0.5)
    assert vm["run_rate_unconstrained"] == [0.0]
    assert vm["run_rate_syntax"] == [0.25]
    assert vm["run_rate_refinestat"] == [0.75]
    assert vm["run_rate_refinestat_minus_syntax"] == [0.5]
    assert vm["expert_reliability_min"] == [7.0]
    assert vm["reliability_separation_min"] == [4.0]
    assert vm["conclusive_tasks"] == [1.0]
    assert vm["heldout_within_tolerance_fraction"] == [1.0]      # -1.1 is within 0.5 of -1.0
    assert vm["scripted_control_accepts"] == [1.0]
    assert vm["null_within_tolerance_fraction"] == [1.0]         # -1.3 is within 0.5 of -1.0
    assert verdict_metrics(made_up([{**GOOD, "null": (7, -1.6)}]), 1, 0.5)["null_within_tolerance_fraction"] == [0.0]
    assert verdict_metrics(made_up([BROKEN_SCRIPT]), 1, 0.5)["scripted_control_accepts"] == [0.0]
    rows = null_rows(made_up([GOOD]), 1, 0.5)
    assert [r["null - expert"] for r in rows] == ["-0.300"] * 3
    assert verdict_metrics(made_up([MIXED]), 1, 0.5)["heldout_within_tolerance_fraction"] == [0.0]
    assert vm["heldout_not_below_null_fraction"] == [1.0]        # -1.1 is above the null's -1.3
    # within 0.5 of the expert, yet more than 0.1 below a null model that matches the expert: fails the null check
    loose = verdict_metrics(made_up([{**GOOD, "null": (7, -1.0), "refinestat": (3, 6, -1.3)}]), 1, 0.5, 0.1)
    assert loose["heldout_within_tolerance_fraction"] == [1.0] and loose["heldout_not_below_null_fraction"] == [0.0]


def test_no_runnable_program_makes_a_task_inconclusive_not_a_loss():
    none = {**GOOD, "unconstrained": (0, 0, 0.0), "syntax": (0, 0, 0.0), "refinestat": (0, 0, 0.0)}
    vm = verdict_metrics(made_up([none]), 1, 0.5)
    assert vm["conclusive_tasks"] == [0.0]
    assert vm["heldout_within_tolerance_fraction"][0] != vm["heldout_within_tolerance_fraction"][0]  # NaN


def test_returned_program_is_the_most_reliable_and_never_chosen_by_its_score():
    part = pd.DataFrame({"attempt": [0, 1, 2], "runnable": [True, True, True], "score": [5, 7, 7],
                         "predictive": [9.0, -5.0, 3.0]})
    assert int(returned_program(part).attempt) == 1
    assert returned_program(part.assign(runnable=False)) is None
