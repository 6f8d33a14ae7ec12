"""Step ``agree``: judge agreement with the ground-truth quality labels (rank correlation per seed).

For each seed, fresh benchmark papers and their candidate briefs (gold + five
degradations) are scored by the rubric judge (ceiling), the LM judge (SmolLM2 reading
the score-token logits), ROUGE-L and the MiniLM greedy-token BERTScore against the
gold brief; Spearman's rho of each scorer with the labels is the metric.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.sci2pol.agreement import agreement_set, bertscore_metric, correlations, rouge_metric, score_all
from stages.sci2pol.config import PAPER, JudgeConfig, load_judge
from stages.sci2pol.expectations import scores_suite
from stages.sci2pol.io import SCORERS
from stages.sci2pol.judges import LMJudge, RubricJudge


@dataclass(frozen=True)
class Paths:
    model: Path = inp("SmolLM2-135M-Instruct asset folder (the LM judge)")
    encoder: Path = inp("all-MiniLM-L6-v2 asset folder (BERTScore token embeddings)")
    scores: Path = out("every scorer's score of every candidate brief (Parquet)")
    correlations: Path = out("Spearman rho of each scorer with the labels, per seed (JSON)")


def run(cfg: JudgeConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score, correlate, validate and write."""
    from stages.assets.loaders import load_causal_lm, load_sentence_encoder

    model, tok = load_causal_lm(paths.model)
    judges = {"rubric": RubricJudge(), "lm": LMJudge(model, tok, cfg.max_tokens)}
    metrics = {"rouge": rouge_metric, "bertscore": bertscore_metric(load_sentence_encoder(paths.encoder))}
    rows, per_seed = [], []
    for k in range(cfg.n_seeds):
        seed = ctx.seed + k
        papers, briefs = agreement_set(cfg.n_papers, seed)
        scores = score_all(papers, briefs, judges, metrics)
        # reference metrics are on 0-1: put them on the judges' 0-5 scale (ranks are unchanged)
        for m in metrics:
            scores[m] = 5 * scores[m]
        per_seed.append({"seed": seed, **correlations(scores, [b.quality for b in briefs])})
        rows.extend({"seed": seed, "pid": b.pid, "kind": b.kind, "quality": b.quality,
                     **{s: float(scores[s][i]) for s in SCORERS}} for i, b in enumerate(briefs))
    df = pd.DataFrame(rows)
    validate_table(df, f"{PAPER}.judge_scores", scores_suite(len(df), SCORERS))
    write_parquet(df, paths.scores)
    write_json({"per_seed": per_seed, "n_papers": cfg.n_papers, "n_briefs_per_seed": len(rows) // cfg.n_seeds},
               paths.correlations)
    return {"per_seed": per_seed}


main = Step(PAPER, "agree", run, load_judge, Paths)


if __name__ == "__main__":
    main()
