"""Step ``agree``: judge agreement with the ground-truth quality labels (rank correlation per seed).

First each LM-judge backend (SmolLM2-135M-Instruct in its chat template, the Gemma-3-270M base model
without one) scores a validation
set of its own papers, and the backend with the higher gold-vs-off-topic AUC there is the
judge under test. Then, for each seed, fresh benchmark-pool papers and their candidate
briefs (gold + five defects, drawn wordings) are scored by the rubric judge (ground-truth
ceiling), the chosen LM judge, ROUGE-L and the MiniLM greedy-token BERTScore (both against a
gold reference in its own wording); per seed: Spearman's rho of each scorer with the labels
and each scorer's gold-vs-off-topic AUC (the LM judge's is the competence gate).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.sci2pol.agreement import (
    agreement_set,
    bertscore_metric,
    choose_backend,
    correlations,
    gate_auc,
    rouge_metric,
    score_all,
)
from stages.sci2pol.config import PAPER, JudgeConfig, load_judge
from stages.sci2pol.expectations import scores_suite
from stages.sci2pol.io import SCORERS
from stages.sci2pol.judges import LMJudge, RubricJudge

CHAT_BACKENDS = ("smollm2",)  # instruction-tuned; the Gemma-3-270M asset is the base model


@dataclass(frozen=True)
class Paths:
    model: Path = inp("SmolLM2-135M-Instruct asset folder (an LM judge backend)")
    gemma: Path = inp("Gemma-3-270M asset folder (an LM judge backend; a base model)")
    encoder: Path = inp("all-MiniLM-L6-v2 asset folder (BERTScore token embeddings)")
    scores: Path = out("every scorer's score of every candidate brief (Parquet)")
    correlations: Path = out("per seed: each scorer's Spearman rho and gold-vs-off-topic AUC; backend choice (JSON)")


def run(cfg: JudgeConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Choose the backend on validation papers, then score, correlate, validate and write."""
    from stages.assets.loaders import load_causal_lm, load_sentence_encoder

    folders = {"smollm2": paths.model, "gemma3": paths.gemma}
    judges = {}
    val: dict[str, tuple[float, float]] = {}
    vpapers, vbriefs = agreement_set(cfg.n_val_papers, ctx.seed, stream="val")
    for b in tqdm(cfg.backends, desc="validation (backend choice)", unit="backend"):
        model, tok = load_causal_lm(folders[b])
        judges[b] = LMJudge(model, tok, cfg.max_tokens, use_chat=b in CHAT_BACKENDS)
        s = score_all(vpapers, vbriefs, {"lm": judges[b]}, {})["lm"]
        val[b] = (gate_auc(s, [x.kind for x in vbriefs]), correlations({"lm": s}, [x.quality for x in vbriefs])["lm"])
    chosen = choose_backend(val)
    scorers = {"rubric": RubricJudge(), "lm": judges[chosen]}
    metrics = {"rouge": rouge_metric, "bertscore": bertscore_metric(load_sentence_encoder(paths.encoder))}
    rows, per_seed = [], []
    for k in tqdm(range(cfg.n_seeds), desc="agreement seeds", unit="seed"):
        seed = ctx.seed + k
        papers, briefs = agreement_set(cfg.n_papers, seed)
        scores = score_all(papers, briefs, scorers, metrics, seed)
        # reference metrics are on 0-1: put them on the judges' 0-5 scale (ranks are unchanged)
        for m in metrics:
            scores[m] = 5 * scores[m]
        kinds = [b.kind for b in briefs]
        per_seed.append({"seed": seed, **correlations(scores, [b.quality for b in briefs]),
                         **{f"auc_{s}": gate_auc(scores[s], kinds) for s in SCORERS}})
        rows.extend({"seed": seed, "pid": b.pid, "kind": b.kind, "quality": b.quality,
                     **{s: float(scores[s][i]) for s in SCORERS}} for i, b in enumerate(briefs))
    df = pd.DataFrame(rows)
    validate_table(df, f"{PAPER}.judge_scores", scores_suite(len(df), SCORERS))
    write_parquet(df, paths.scores)
    write_json({"per_seed": per_seed, "n_papers": cfg.n_papers, "n_briefs_per_seed": len(rows) // cfg.n_seeds,
                "backend": chosen, "validation": [{"backend": b, "auc_gold_vs_off_topic": a, "rho": r}
                                                  for b, (a, r) in val.items()],
                "n_val_papers": cfg.n_val_papers}, paths.correlations)
    return {"backend": chosen, "per_seed": per_seed}


main = Step(PAPER, "agree", run, load_judge, Paths)


if __name__ == "__main__":
    main()
