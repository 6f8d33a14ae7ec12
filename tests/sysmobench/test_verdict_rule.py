"""The verdict rule of params.yaml on made-up score tables gives each verdict; the gate closes every claim; a
text-diff metric, a blind metric and a metric that rejects everything cannot be reproduced."""

from __future__ import annotations

import pandas as pd
import pytest

from stages.core.report import decide_claim
from stages.sysmobench.config import load_report
from stages.sysmobench.mutation import OPERATORS, TARGET_METRIC
from stages.sysmobench.report import CARD, gated_verdict, verdict_metrics
from tests.conftest import ROOT

METRIC_NAMES = ("syntax", "runtime", "conformance", "invariants")
RUNS = "sany=ok runtime={runtime} conformance={conformance} invariants={invariants}"


def row(seed: int, kind: str, op: str, scores: dict[str, float], equivalent: bool = False,
        outcomes: str | None = None) -> dict:
    if outcomes is None:  # a decided run for every metric: an invariant below 1 is a reported violation
        outcomes = RUNS.format(runtime="ok", conformance="ok",
                               invariants="violated" if scores["invariants"] < 1 else "ok")
    return {"seed_index": seed, "system": "spinlock", "candidate": 0, "kind": kind, "operator": op, "site": op,
            "renaming": "{}", "equivalent": equivalent, "whole_module_parses": True, **scores, "outcomes": outcomes,
            "spec": ""}


def ones() -> dict[str, float]:
    return {m: 1.0 for m in METRIC_NAMES}


def table(seeds: list[str]) -> pd.DataFrame:
    """Per seed: 'good' (references 1, every mutant caught by its metric, ordered, specs with the reference's
    behaviour left at 1), 'wrong' (no mutant caught by its target, the ordering inverted, the renamed reference
    caught), 'textdiff' (every changed text scores below 1 on every metric), 'limit' (as good, but the invariant
    check of every drop_guard mutant stopped by its time limit), 'broken' (the reference fails a metric)."""
    rows = []
    for s, kind in enumerate(seeds):
        ref = ones()
        if kind == "broken":
            ref["conformance"] = 0.5
        rows.append(row(s, "reference", "none", ref))
        for neutral in ("renamed", "reordered"):
            scores = ones()
            if kind == "wrong":
                scores["runtime"] = 0.5
            if kind == "textdiff":
                scores = {m: 0.5 for m in METRIC_NAMES}
            rows.append(row(s, neutral, "none", scores))
        rows.append(row(s, "mutant", "drop_guard", ones(), equivalent=True))
        for op in OPERATORS:
            scores, outcomes = ones(), None
            target = TARGET_METRIC[op]
            if kind in ("good", "broken", "limit"):
                order = ["syntax", "runtime", "conformance"]
                for m in order[order.index(target):] if target in order else [target]:
                    scores[m] = 0.5
                if kind == "limit" and op == "drop_guard":
                    scores["invariants"] = 0.0
                    outcomes = RUNS.format(runtime="ok", conformance="ok", invariants="timeout")
            elif kind == "wrong":       # each mistake seen by a metric not meant for it, out of the paper's order
                scores["syntax" if op == "type_error" else "runtime"] = 0.5
            elif kind == "textdiff":
                scores = {m: 0.5 for m in METRIC_NAMES}
            rows.append(row(s, "mutant", op, scores, outcomes=outcomes))
    return pd.DataFrame(rows)


def claim_of(seeds: list[str]):
    cfg = load_report(ROOT / "params.yaml")
    per_seed = verdict_metrics(table(seeds), list(OPERATORS))
    claim = decide_claim(CARD, cfg.verdict, per_seed, seeds=list(range(len(seeds))), profile="default", timings={})
    return gated_verdict(claim, cfg.gates)


@pytest.mark.parametrize(("seeds", "expected"), [
    (["good"] * 3, "reproduced"),
    (["wrong"] * 3, "not_reproduced"),
    (["textdiff"] * 3, "partly"),                   # catches everything, but also the specs that are right
    (["limit"] * 3, "partly"),                      # a time limit is not a catch
    (["good", "wrong", "good"], "inconclusive"),    # seeds disagree on every claim
    (["broken"] * 3, "inconclusive"),               # the gate fails: a metric rejects a correct spec
    (["good"] * 2, "inconclusive"),                 # too few seeds
])
def test_each_verdict(seeds, expected):
    assert claim_of(seeds).verdict == expected


def test_the_text_diff_metric_fails_exactly_the_specificity_check():
    status = {c.name: c.status for c in claim_of(["textdiff"] * 3).checks}
    assert [n for n, s in status.items() if s == "fails"] == [
        n for n in status if "reference's behaviour" in n]


def test_wiring_operators_are_not_in_the_verdict():
    metrics = {c.metric for c in load_report(ROOT / "params.yaml").verdict.checks}
    assert "caught_rename_variable" not in metrics and "caught_remove_action" not in metrics
    assert {"caught_drop_guard", "specificity_min_share", "ordering_share"} <= metrics


def test_a_metric_that_rejects_everything_cannot_pass():
    # every candidate, the reference included, scores 0: every mutant is "caught", but the gate fails
    t = table(["good"] * 3)
    for m in METRIC_NAMES:
        t[m] = 0.0
    cfg = load_report(ROOT / "params.yaml")
    claim = decide_claim(CARD, cfg.verdict, verdict_metrics(t, list(OPERATORS)), seeds=[0, 1, 2],
                         profile="default", timings={})
    assert gated_verdict(claim, cfg.gates).verdict == "inconclusive"
