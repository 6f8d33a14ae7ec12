"""Step ``bench``: the 18-task benchmark for SmolLM2 without fine-tuning and with LoRA on each corpus set.

One fixed item set (``items_per_task`` items per task, each task drawing its papers over all
benchmark papers) is answered by the base model once and by LoRA adapters trained on the
curated pairs and on as many unfiltered pairs, one run per seed and set. Both sets follow
one recipe: on the first seed the learning rate is chosen from a grid by the held-out brief
loss, steps by early stopping on that loss; later seeds reuse the chosen rate. Choice tasks
are scored by option log-likelihood, open tasks by one generated line scored alone.
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
from stages.sci2pol.expectations import answers_suite, losses_suite, runs_suite, task_scores_suite
from stages.sci2pol.finetune import (
    Fit,
    add_lora,
    fit_with_early_stopping,
    greedy_generate,
    select_learning_rate,
    training_examples,
)
from stages.sci2pol.funnel import Pair
from stages.sci2pol.io import VARIANTS, read_pairs
from stages.sci2pol.judges import bootstrap_se, lm_option_logliks
from stages.sci2pol.tasks import Item, make_items, score_choice, score_open

BENCH_SEED_OFFSET = 1000  # benchmark papers and items come from their own stream, apart from the agreement sets


@dataclass(frozen=True)
class Paths:
    model: Path = inp("SmolLM2-135M-Instruct asset folder")
    pairs: Path = inp("curated, unfiltered and held-out pairs (from corpus)")
    scores: Path = out("per variant, seed and task: score (0-100) and bootstrap SE (Parquet)")
    answers: Path = out("every item's answer and its score (Parquet)")
    losses: Path = out("LoRA training and held-out losses per step (Parquet)")
    runs: Path = out("every LoRA run: set, seed, learning rate, step kept, held-out loss, whether used (Parquet)")


def evaluate(model: Any, tok: Any, papers: list[Paper], items: list[Item], cfg: BenchInputs,
             desc: str) -> tuple[list[dict], list[dict]]:
    """Every task's score (0-100) with its bootstrap SE, and every item's answer."""
    by_id = {p.pid: p for p in papers}
    scores, answers = [], []
    for t in tqdm(cfg.bench.task_specs(), desc=desc, unit="task", leave=False):
        its = [i for i in items if i.task == t.name]
        if t.kind == "choice":
            score, se, picked = score_choice(its, lambda c, o: lm_option_logliks(model, tok, c, o),
                                             cfg.bench.n_bootstrap, cfg.bench.bootstrap_seed)
            texts = [it.options[k] for it, k in zip(its, picked, strict=True)]
            per_item = [100.0 * (k == it.answer) for it, k in zip(its, picked, strict=True)]
            gold = [it.answer for it in its]
        else:
            per_item, texts = score_open(its, by_id, lambda ps: greedy_generate(
                model, tok, ps, cfg.finetune.max_new_tokens, cfg.bench.gen_batch))
            score, se = float(per_item.mean()), bootstrap_se(per_item, cfg.bench.n_bootstrap, cfg.bench.bootstrap_seed)
            picked = gold = [-1] * len(its)  # open items have no option
        scores.append({"task": t.name, "stage": t.stage, "kind": t.kind, "score": float(score), "se": se,
                       "n_items": len(its)})
        answers.extend({"task": t.name, "item": k, "pid": it.pid, "answer": a, "item_score": float(s),
                        "picked": int(p), "correct": int(c)}
                       for k, (it, a, s, p, c) in enumerate(zip(its, texts, per_item, picked, gold, strict=True)))
    return scores, answers


def examples(pairs_df: pd.DataFrame, subset: str, tok: Any, max_tokens: int) -> list[tuple[list[int], int]]:
    """Tokenised (paper, brief) examples of one set of the pairs table."""
    rows = pairs_df[pairs_df.set == subset]
    pairs = [Pair(r.did, r.pid, r.text, bool(r.is_long), r.kind, r.source_pid) for r in rows.itertuples()]
    return training_examples(pairs, dict(zip(rows.pid, rows.paper_text, strict=True)), tok, max_tokens)


def lora_run(model_dir: Path, pairs_df: pd.DataFrame, variant: str, lr: float, cfg: BenchInputs,
             seed: int) -> tuple[Any, Any, Fit, int]:
    """A fresh base model with LoRA adapters trained on the ``variant`` pairs at ``lr`` with early stopping, and
    the number of training examples left after tokenising and cutting to ``max_tokens``."""
    from stages.assets.loaders import load_causal_lm

    f = cfg.finetune
    model, tok = load_causal_lm(model_dir)
    model = add_lora(model, f.lora_r, f.lora_alpha, seed)
    train = examples(pairs_df, variant, tok, f.max_tokens)
    fit = fit_with_early_stopping(model, train,
                                  examples(pairs_df, "val", tok, f.max_tokens), lr=lr, max_steps=f.max_steps,
                                  batch_size=f.batch_size, eval_every=f.eval_every, patience=f.patience, seed=seed,
                                  pad_id=tok.eos_token_id)
    return model, tok, fit, len(train)


def run(cfg: BenchInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score the base model once; per seed and set, fine-tune (grid on the first seed) and score."""
    from stages.assets.loaders import load_causal_lm

    pairs_df = read_pairs(paths.pairs)
    papers = make_papers("bench", cfg.data.n_bench_papers, ctx.seed + BENCH_SEED_OFFSET)
    items = make_items(papers, cfg.bench.items_per_task, ctx.seed + BENCH_SEED_OFFSET, cfg.bench.task_specs())
    scores, answers, losses, runs = [], [], [], []
    model, tok = load_causal_lm(paths.model)
    s, a = evaluate(model, tok, papers, items, cfg, "base model")
    scores.extend({"variant": "none", "seed": ctx.seed, **r} for r in s)
    answers.extend({"variant": "none", "seed": ctx.seed, **r} for r in a)
    chosen_lr: dict[str, float] = {}
    for k in range(cfg.finetune.n_seeds):
        seed = ctx.seed + k
        for variant in [v for v in VARIANTS if v != "none"]:
            grid = cfg.finetune.lr_grid if variant not in chosen_lr else [chosen_lr[variant]]
            fits, n_trains, best_model = [], [], None
            for lr in tqdm(grid, desc=f"seed {seed} {variant} LoRA", unit="lr", leave=False):
                model, tok, fit, n_train = lora_run(paths.model, pairs_df, variant, lr, cfg, seed)
                if not fits or fit.best_val < fits[select_learning_rate(fits)].best_val:
                    best_model = model
                fits.append(fit)
                n_trains.append(n_train)
            best = select_learning_rate(fits)
            chosen_lr.setdefault(variant, fits[best].lr)
            for i, fit in enumerate(fits):
                runs.append({"variant": variant, "seed": seed, "lr": fit.lr, "best_step": fit.best_step,
                             "best_val": fit.best_val, "steps_run": len(fit.train), "used": i == best,
                             "n_train": n_trains[i]})
                losses.extend({"variant": variant, "seed": seed, "lr": fit.lr, "split": "train", "step": j + 1,
                               "loss": v} for j, v in enumerate(fit.train))
                losses.extend({"variant": variant, "seed": seed, "lr": fit.lr, "split": "val", "step": st,
                               "loss": v} for st, v in fit.val)
            s, a = evaluate(best_model, tok, papers, items, cfg, f"seed {seed} {variant}")
            scores.extend({"variant": variant, "seed": seed, **r} for r in s)
            answers.extend({"variant": variant, "seed": seed, **r} for r in a)
    tables = {"scores": (pd.DataFrame(scores), task_scores_suite, "bench_scores"),
              "answers": (pd.DataFrame(answers), answers_suite, "bench_answers"),
              "losses": (pd.DataFrame(losses, columns=["variant", "seed", "lr", "split", "step", "loss"]),
                         losses_suite, "lora_losses"),
              "runs": (pd.DataFrame(runs), runs_suite, "lora_runs")}
    for df, suite, table in tables.values():
        validate_table(df, f"{PAPER}.{table}", suite(len(df)))
    for name, (df, _, _) in tables.items():
        write_parquet(df, getattr(paths, name))
    overall = tables["scores"][0].groupby("variant").score.mean().round(2).to_dict()
    return {"overall_mean_over_seeds": overall, "chosen_lr": chosen_lr}


main = Step(PAPER, "bench", run, load_bench_inputs, Paths)


if __name__ == "__main__":
    main()
