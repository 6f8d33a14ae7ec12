"""Judge agreement: scores of every scorer, rank correlations with the labels; the smoke DAG's real assets."""

import numpy as np
import pytest
import torch

from stages.sci2pol.agreement import agreement_set, bertscore_metric, correlations, rouge_metric, score_all
from stages.sci2pol.judges import LMJudge, RubricJudge, choose, lm_option_logliks


def test_rubric_ceiling_beats_rouge_on_generated_briefs():
    papers, briefs = agreement_set(4, 0)
    scores = score_all(papers, briefs, {"rubric": RubricJudge()}, {"rouge": rouge_metric})
    assert set(scores) == {"rubric", "rouge"} and all(len(v) == len(briefs) for v in scores.values())
    # the gold brief is its own reference
    assert np.allclose(scores["rouge"][[b.kind == "gold" for b in briefs]], 1.0)
    rho = correlations(scores, [b.quality for b in briefs])
    assert rho["rubric"] > rho["rouge"]


def test_real_lm_judge_bertscore_and_choice_scorer(smoke_repo):
    from stages.assets.loaders import load_causal_lm, load_sentence_encoder

    assets = smoke_repo.paths("sci2pol-agree")  # the smoke DAG's SmolLM2 and MiniLM folders
    torch.set_num_threads(1)
    model, tok = load_causal_lm(assets.model)
    papers, briefs = agreement_set(1, 0)
    scores = score_all(papers, briefs[:2], {"lm": LMJudge(model, tok, max_tokens=256)},
                       {"bertscore": bertscore_metric(load_sentence_encoder(assets.encoder))})
    assert np.all((scores["lm"] >= 0) & (scores["lm"] <= 5))
    assert scores["bertscore"][0] == pytest.approx(1.0, abs=1e-4)  # gold vs itself
    assert scores["bertscore"][1] < 1.0
    ll = lm_option_logliks(model, tok, "The capital of France is", ["Paris", "banana"])
    assert ll[0] > ll[1]
    assert choose(lambda c, o: lm_option_logliks(model, tok, c, [o])[0], "The capital of France is",
                  ["banana", "Paris"]) == 1
