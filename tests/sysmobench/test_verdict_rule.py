"""The verdict rule of params.yaml on made-up score tables gives each verdict; the gate closes every claim."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.report import decide_claim
from stages.sysmobench.config import load_report
from stages.sysmobench.mutation import OPERATORS, TARGET_METRIC
from stages.sysmobench.report import CARD, caught_share, gated_verdict, ordering_share, verdict_metrics
from tests.conftest import ROOT

METRIC_NAMES = ("syntax", "runtime", "conformance", "invariants")


def row(seed: int, kind: str, op: str, scores: dict[str, float], equivalent: bool = False) -> dict:
    return {"seed_index": seed, "system": "spinlock", "candidate": 0, "kind": kind, "operator": op, "site": "",
            "equivalent": equivalent, "whole_module_parses": True, **scores, "outcomes": "", "spec": ""}


def table(seeds: list[str]) -> pd.DataFrame:
    """Per seed: 'good' (references 1, every mutant caught by its metric, ordered), 'blind' (no metric catches
    anything), 'mixed' (syntax and runtime catch theirs, conformance and invariants miss), 'broken' (the
    reference fails a metric)."""
    rows = []
    for s, kind in enumerate(seeds):
        ref = {m: 1.0 for m in METRIC_NAMES}
        if kind == "broken":
            ref["conformance"] = 0.5
        rows.append(row(s, "reference", "none", ref))
        for op in OPERATORS:
            scores = {m: 1.0 for m in METRIC_NAMES}
            target = TARGET_METRIC[op]
            caught = kind in ("good", "broken") or (kind == "mixed" and target in ("syntax", "runtime"))
            if caught:  # a caught mistake lowers its metric and (the paper's order) the ones after it
                order = ["syntax", "runtime", "conformance"]
                for m in order[order.index(target):] if target in order else [target]:
                    scores[m] = 0.5
            rows.append(row(s, "mutant", op, scores))
        rows.append(row(s, "mutant", "drop_guard", {m: 1.0 for m in METRIC_NAMES}, equivalent=True))
    return pd.DataFrame(rows)


def verdict_of(seeds: list[str]) -> str:
    cfg = load_report(ROOT / "params.yaml")
    per_seed = verdict_metrics(table(seeds), list(OPERATORS))
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(len(seeds))), profile="default", timings={})
    return gated_verdict(claim, cfg.gates).verdict


@pytest.mark.parametrize(("seeds", "expected"), [
    (["good"] * 3, "reproduced"),
    (["blind"] * 3, "not_reproduced"),
    (["mixed"] * 3, "partly"),
    (["good", "blind", "good"], "inconclusive"),    # seeds disagree on every claim
    (["broken"] * 3, "inconclusive"),               # the gate fails: a metric rejects a correct spec
    (["good"] * 2, "inconclusive"),                 # too few seeds
])
def test_each_verdict(seeds, expected):
    assert verdict_of(seeds) == expected


def test_shares_by_hand():
    t = pd.DataFrame([row(0, "mutant", "drop_guard", {"syntax": 1, "runtime": 1, "conformance": 1, "invariants": .5}),
                      row(0, "mutant", "drop_guard", {"syntax": 1, "runtime": 1, "conformance": 1, "invariants": 1}),
                      row(0, "mutant", "remove_action", {"syntax": 1, "runtime": .5, "conformance": .8,
                                                         "invariants": 1})])
    assert caught_share(t, "drop_guard") == 0.5
    assert caught_share(t, "remove_action") == 1.0
    assert ordering_share(t) == 0.5  # of the two caught mutants, the remove_action one has conformance above runtime
    vm = verdict_metrics(pd.concat([t, pd.DataFrame([row(0, "reference", "none", {m: 1.0 for m in METRIC_NAMES})])]),
                         ["drop_guard", "remove_action", "swap_update"])
    assert vm["caught_swap_update"] == [None]         # no mutant of the kind: the check cannot pass on that seed
    assert vm["reference_min_score"] == [1.0] and vm["mutant_mean_runtime"] == [pytest.approx(2.5 / 3)]


def test_a_metric_that_rejects_everything_cannot_pass():
    # every candidate, the reference included, scores 0: every mutant is "caught", but the gate fails
    t = table(["good"] * 3)
    for m in METRIC_NAMES:
        t[m] = 0.0
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(t, list(OPERATORS)), seeds=[0, 1, 2],
                         profile="default", timings={})
    assert gated_verdict(claim, cfg.gates).verdict == "inconclusive"
