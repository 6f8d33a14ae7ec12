"""Step ``reward_model``: the generative reward models, with and without the critique (§3.2), per RL seed; span F1.

The model reads (source, output), writes the critique and then one score per output
word (+1 good span, −1 poor span, 0 otherwise). The ablation writes the scores directly.
Held-out outputs measure word-level precision/recall/F1 of the good and poor labels.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.core.io import atomic_dir, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.tokenizer import SmallTokenizer
from stages.core.workers import in_worker, map_runs
from stages.text2grad.config import PAPER, RewardModelConfig, load_reward_model
from stages.text2grad.critic import parse_scores
from stages.text2grad.io import model_file, read_tables
from stages.text2grad.models import RewardFormat, predict_word_scores
from stages.text2grad.training import build_lm, fit, sequences

VARIANTS = {"critique": True, "no_critique": False}


@dataclass(frozen=True)
class Paths:
    sources: Path = inp("sources")
    outputs: Path = inp("annotated outputs")
    tokenizer: Path = inp("tokenizer")
    models: Path = out("folder: critique_seed<s>.safetensors, no_critique_seed<s>.safetensors, manifest.json")
    evaluation: Path = out("span precision/recall/F1 on held-out outputs (JSON)")
    examples: Path = out("held-out outputs with predicted critiques and scores (Parquet)")


def span_f1(predicted: list[list[int]], annotated: list[list[int]], label: int) -> dict[str, float]:
    """Word-level precision, recall and F1 of one label (+1 good or −1 poor) against the annotations."""
    pred = np.concatenate([np.asarray(p) == label for p in predicted]) if predicted else np.zeros(0, bool)
    gold = np.concatenate([np.asarray(a) == label for a in annotated]) if annotated else np.zeros(0, bool)
    tp = float((pred & gold).sum())
    precision = tp / max(float(pred.sum()), 1.0)
    recall = tp / max(float(gold.sum()), 1.0)
    f1 = 2 * precision * recall / (precision + recall) if precision + recall else 0.0
    return {"precision": precision, "recall": recall, "f1": f1}


@dataclass(frozen=True)
class Shared:
    """What every reward model reads: the config, the tokenizer file, the rm_train and rm_test outputs, the seed."""

    cfg: RewardModelConfig
    tokenizer: Path
    train: pd.DataFrame
    test: pd.DataFrame
    seed: int


def read_inputs(cfg: RewardModelConfig, paths: Paths, seed: int) -> Shared:
    """The rm_train outputs and the rm_test outputs (sorted by id), as every run reads them."""
    _, outputs = read_tables(paths)
    return Shared(cfg, Path(paths.tokenizer), outputs[outputs.split == "rm_train"],
                  outputs[outputs.split == "rm_test"].sort_values("id"), seed)


def reward_model_run(job: tuple[int, str], sh: Shared) -> tuple[dict[str, torch.Tensor], dict[str, Any], pd.DataFrame]:
    """One (seed index, variant) reward model, seeded from the job alone: its weights, scores and examples."""
    s, name = job
    cfg, train, test = sh.cfg, sh.train, sh.test
    tok = SmallTokenizer.load(sh.tokenizer)
    gold = [parse_scores(w) for w in test.word_scores]
    with_critique = VARIANTS[name]
    fmt = RewardFormat(tok, with_critique)
    prefixes = [fmt.prefix(x, o) for x, o in zip(train.source, train.output, strict=True)]
    targets = [fmt.target(c, parse_scores(w)) for c, w in zip(train.critique, train.word_scores, strict=True)]
    tokens, mask = sequences(prefixes, targets, tok.pad_id, cfg.model.max_len)
    seed = derive_seed(sh.seed, PAPER, "reward_model", name, s) % 2**32
    lm = build_lm(cfg.model, tok.vocab_size, seed)
    losses = fit(lm, tokens, mask, cfg.batch_size, cfg.lr, cfg.trainer, seed, not in_worker())
    lm.eval()
    pred, critiques = predict_word_scores(lm, fmt, list(test.source), list(test.output), cfg.max_critique)
    scores = {
        "seed": s, "good": span_f1(pred, gold, 1), "poor": span_f1(pred, gold, -1),
        "word_accuracy": float(np.mean(np.concatenate([np.asarray(p) == np.asarray(g)
                                                       for p, g in zip(pred, gold, strict=True)]))),
        "critique_exact": float(np.mean([c == g for c, g in zip(critiques, test.critique, strict=True)]))
        if with_critique else None,
        "final_loss": float(np.mean(losses[-20:])), "steps": len(losses)}
    examples = pd.DataFrame({"model": name, "seed": s, "id": test.id.to_numpy(), "source": test.source.to_numpy(),
                             "output": test.output.to_numpy(), "critique": test.critique.to_numpy(),
                             "gold_scores": test.word_scores.to_numpy(),
                             "predicted_critique": critiques if with_critique else "",
                             "predicted_scores": [" ".join(map(str, p)) for p in pred]})
    return dict(lm.state_dict()), scores, examples


def run(cfg: RewardModelConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train both reward models on rm_train per RL seed over ``threads / max_threads`` processes; score rm_test."""
    runs = [(s, name) for s in range(cfg.n_seeds) for name in VARIANTS]
    sh = read_inputs(cfg, paths, ctx.seed)
    results = map_runs(reward_model_run, runs, sh, threads=ctx.threads, max_threads=cfg.max_threads,
                       desc="reward models")
    vocab_size = SmallTokenizer.load(paths.tokenizer).vocab_size
    evaluation: dict[str, Any] = {"n_train": len(sh.train), "n_test": len(sh.test), "n_seeds": cfg.n_seeds,
                                  **{name: [] for name in VARIANTS}}
    examples = []
    with atomic_dir(paths.models) as folder:
        for (s, name), (state, scores, frame) in zip(runs, results, strict=True):
            evaluation[name].append(scores)
            examples.append(frame)
            save_safetensors(state, folder / model_file(name, s), metadata={"variant": name, "seed": str(s)})
        write_json({"model": cfg.model.model_dump(), "vocab_size": vocab_size, "variants": VARIANTS,
                    "n_seeds": cfg.n_seeds}, folder / "manifest.json")
    write_json(evaluation, paths.evaluation, finite=True)
    write_parquet(pd.concat(examples, ignore_index=True), paths.examples)
    return {f"{name}_good_f1_seed{e['seed']}": e["good"]["f1"] for name in VARIANTS for e in evaluation[name]}


main = Step(PAPER, "reward_model", run, load_reward_model, Paths)


if __name__ == "__main__":
    main()
