"""Step ``bench``: the 18-task benchmark for SmolLM2 without fine-tuning and with LoRA on each corpus set.

For every seed: fresh benchmark papers and items; the base model, LoRA on the curated
pairs and LoRA on as many unfiltered pairs are each scored on every task (choice tasks by
option log-likelihood, open tasks by generating one line and scoring it with the rubric
judges); per-task scores with bootstrap standard errors, every item's answer, and the
LoRA training losses.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm.auto import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.sci2pol.config import PAPER, BenchInputs, load_bench_inputs
from stages.sci2pol.data import Paper, make_papers
from stages.sci2pol.expectations import answers_suite, losses_suite, task_scores_suite
from stages.sci2pol.finetune import add_lora, greedy_generate, train_lora, training_examples
from stages.sci2pol.funnel import Pair
from stages.sci2pol.io import VARIANTS, read_pairs
from stages.sci2pol.judges import RubricJudge, bootstrap_se, lm_option_logliks
from stages.sci2pol.tasks import TASKS, Item, make_items, score_choice, score_open

BENCH_SEED_OFFSET = 1000  # benchmark papers come from their own stream, apart from the judge-agreement set


@dataclass(frozen=True)
class Paths:
    model: Path = inp("SmolLM2-135M-Instruct asset folder")
    pairs: Path = inp("curated and unfiltered training pairs (from corpus)")
    scores: Path = out("per variant, seed and task: score (0-100) and bootstrap SE (Parquet)")
    answers: Path = out("every item's answer and its score (Parquet)")
    losses: Path = out("LoRA training losses (Parquet)")


def evaluate(model: Any, tok: Any, papers: list[Paper], items: list[Item], cfg: BenchInputs,
             desc: str) -> tuple[list[dict], list[dict]]:
    """Every task's score (0-100) with its bootstrap SE, and every item's answer."""
    by_id = {p.pid: p for p in papers}
    judge = RubricJudge()
    scores, answers = [], []
    for t in tqdm(TASKS, desc=desc, unit="task", leave=False):
        its = [i for i in items if i.task == t.name]
        if t.kind == "choice":
            score, se, picked = score_choice(its, lambda c, o: lm_option_logliks(model, tok, c, o),
                                             cfg.bench.n_bootstrap, cfg.bench.bootstrap_seed)
            texts = [it.options[k] for it, k in zip(its, picked, strict=True)]
            per_item = [100.0 * (k == it.answer) for it, k in zip(its, picked, strict=True)]
        else:
            per_item, texts = score_open(its, by_id,
                                         lambda p: greedy_generate(model, tok, p, cfg.finetune.max_new_tokens), judge)
            score, se = float(per_item.mean()), bootstrap_se(per_item, cfg.bench.n_bootstrap, cfg.bench.bootstrap_seed)
        scores.append({"task": t.name, "stage": t.stage, "kind": t.kind, "score": float(score), "se": se,
                       "n_items": len(its)})
        answers.extend({"task": t.name, "item": k, "pid": it.pid, "answer": a, "item_score": float(s)}
                       for k, (it, a, s) in enumerate(zip(its, texts, per_item, strict=True)))
    return scores, answers


def lora_model(model: Any, tok: Any, pairs_df: pd.DataFrame, variant: str, cfg: BenchInputs,
               seed: int) -> tuple[Any, list[float]]:
    """The model with LoRA adapters trained on the ``variant`` pairs; the training loss curve."""
    f = cfg.finetune
    rows = pairs_df[pairs_df.set == variant]
    pairs = [Pair(r.did, r.pid, r.text, bool(r.is_long), r.kind, r.source_pid) for r in rows.itertuples()]
    paper_texts = dict(zip(pairs_df.pid, pairs_df.paper_text, strict=True))
    model = add_lora(model, f.lora_r, f.lora_alpha)
    exs = training_examples(pairs, paper_texts, tok, f.max_tokens)
    return model, train_lora(model, exs, f.steps, f.batch_size, f.lr, seed, tok.eos_token_id)


def run(cfg: BenchInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Fine-tune and evaluate every variant on every seed."""
    from stages.assets.loaders import load_causal_lm

    pairs_df = read_pairs(paths.pairs)
    scores, answers, losses = [], [], []
    for k in range(cfg.finetune.n_seeds):
        seed = ctx.seed + k
        papers = make_papers("bench", cfg.data.n_bench_papers, seed + BENCH_SEED_OFFSET)
        items = make_items(papers, cfg.bench.items_per_task, seed)
        for variant in VARIANTS:
            model, tok = load_causal_lm(paths.model)
            if variant != "none":
                model, curve = lora_model(model, tok, pairs_df, variant, cfg, seed)
                losses.extend({"variant": variant, "seed": seed, "step": i, "loss": v} for i, v in enumerate(curve))
            s, a = evaluate(model, tok, papers, items, cfg, f"seed {seed} {variant}")
            scores.extend({"variant": variant, "seed": seed, **r} for r in s)
            answers.extend({"variant": variant, "seed": seed, **r} for r in a)
    tables = {"scores": (pd.DataFrame(scores), task_scores_suite, "bench_scores"),
              "answers": (pd.DataFrame(answers), answers_suite, "bench_answers"),
              "losses": (pd.DataFrame(losses, columns=["variant", "seed", "step", "loss"]), losses_suite,
                         "lora_losses")}
    for df, suite, table in tables.values():
        validate_table(df, f"{PAPER}.{table}", suite(len(df)))
    for name, (df, _, _) in tables.items():
        write_parquet(df, getattr(paths, name))
    overall = tables["scores"][0].groupby("variant").score.mean().round(2).to_dict()
    return {"overall_mean_over_seeds": overall}


main = Step(PAPER, "bench", run, load_bench_inputs, Paths)


if __name__ == "__main__":
    main()
