"""Judge agreement: scores of every scorer, the gate AUC, the backend choice; the smoke DAG's real assets."""

import numpy as np
import pytest
import torch

from stages.sci2pol.agreement import (
    agreement_set,
    bertscore_metric,
    choose_backend,
    correlations,
    gate_auc,
    rouge_metric,
    score_all,
)
from stages.sci2pol.judges import LMJudge, RubricJudge, choose, lm_option_logliks


def test_reference_metrics_never_compare_a_gold_brief_with_itself():
    papers, briefs = agreement_set(4, 0)
    scores = score_all(papers, briefs, {"rubric": RubricJudge()}, {"rouge": rouge_metric})
    assert set(scores) == {"rubric", "rouge"} and all(len(v) == len(briefs) for v in scores.values())
    gold = np.array([b.kind == "gold" for b in briefs])
    assert np.all(scores["rouge"][gold] < 1.0)
    rho = correlations(scores, [b.quality for b in briefs])
    assert rho["rubric"] > rho["rouge"]
    assert gate_auc(scores["rubric"], [b.kind for b in briefs]) == 1.0


def test_validation_and_test_sets_draw_other_papers():
    (val, _), (test, _) = agreement_set(3, 0, stream="val"), agreement_set(3, 0)
    assert [p.body for p in val] != [p.body for p in test]


def test_gate_auc_and_backend_choice_by_hand():
    kinds = ["gold", "off_topic", "gold", "off_topic", "reversed_finding"]
    # gold {4, 2} vs off-topic {1, 2}: (4>1, 4>2, 2>1, 2=2) -> 3.5 / 4
    assert gate_auc([4, 1, 2, 2, 0], kinds) == pytest.approx(0.875)
    assert choose_backend({"smollm2": (0.6, 0.1), "gemma3": (0.9, -0.2)}) == "gemma3"
    assert choose_backend({"smollm2": (0.7, 0.3), "gemma3": (0.7, 0.1)}) == "smollm2"
    assert choose_backend({"smollm2": (float("nan"), 0.0), "gemma3": (0.5, 0.0)}) == "gemma3"


def test_real_lm_judge_bertscore_and_choice_scorer(smoke_repo):
    from stages.assets.loaders import load_causal_lm, load_sentence_encoder

    assets = smoke_repo.paths("sci2pol-agree")  # the smoke DAG's SmolLM2 and MiniLM folders
    torch.set_num_threads(1)
    model, tok = load_causal_lm(assets.model)
    papers, briefs = agreement_set(1, 0)
    scores = score_all(papers, briefs[:2], {"lm": LMJudge(model, tok)},
                       {"bertscore": bertscore_metric(load_sentence_encoder(assets.encoder))})
    assert np.all((scores["lm"] >= 0) & (scores["lm"] <= 5))
    assert 0.5 < scores["bertscore"][0] < 1.0  # gold against a reference in another wording
    ll = lm_option_logliks(model, tok, "The capital of France is", ["Paris", "banana"])
    assert ll[0] > ll[1]
    assert choose(lambda c, o: lm_option_logliks(model, tok, c, [o])[0], "The capital of France is",
                  ["banana", "Paris"]) == 1
