"""Step ``evaluate``: every trained model on ONE shared held-out set, and on the mini-RULER.

Primary metric: the long-context loss gain, i.e. the mean loss on held-out document tokens
without minus with the document's verified contexts prepended (the same sequences for
every model, so no model is scored on its own variant's data). Secondary: mini-RULER
accuracy by task and length (some lengths beyond the training length).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from stages.core.io import load_safetensors, read_json, read_parquet, write_json, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.core.tokenizer import SmallTokenizer
from stages.entropylong.config import PAPER, EvaluateInputs, ModelSpec, load_evaluate
from stages.entropylong.lm import build_lm, continuation_logprobs, span_nll
from stages.entropylong.mini_ruler import TASKS, build_item, haystack_sentences, rank_score


@dataclass(frozen=True)
class Paths:
    documents: Path = inp("documents (held-out texts are the mini-RULER haystack)")
    tokenizer: Path = inp("the small tokenizer")
    heldout: Path = inp("shared held-out pairs")
    models: Path = inp("trained weights")
    evaluation: Path = out("per-seed metrics, loss gains, mini-RULER accuracies (JSON)")
    ruler_items: Path = out("the mini-RULER items and every model's score on each (Parquet)")


def long_context_gain(model: Any, heldout: pd.DataFrame, batch_size: int) -> dict[str, float]:
    """Mean NLL of the document tokens without / with the verified contexts / after random text; the gains."""
    nll = {}
    for condition in ("without_context", "with_context", "random_context"):
        rows = heldout[heldout.condition == condition].sort_values("doc_id")
        seqs = rows.tokens.tolist()
        # the document runs from doc_start to the separator that ends the sequence
        losses = span_nll(model, seqs, rows.doc_start.tolist(), [len(s) - 1 for s in seqs], batch_size)
        nll[condition] = float(np.concatenate(losses).mean())
    return {"nll_without": nll["without_context"], "nll_with": nll["with_context"],
            "nll_random": nll["random_context"], "gain": nll["without_context"] - nll["with_context"],
            "content_gain": nll["random_context"] - nll["with_context"]}


def ruler_items(cfg: EvaluateInputs, tok: SmallTokenizer, texts: list[str], seed: int) -> list[Any]:
    """Every mini-RULER item, seeded per (task, length, item)."""
    r = cfg.evaluate.ruler
    too_long = [n for n in r.lengths if n + 16 > cfg.max_len]
    if too_long:
        raise ValueError(f"{PAPER}.evaluate.ruler.lengths {too_long} do not fit the model's max_len {cfg.max_len} "
                         "(with 16 tokens for the answer)")
    hay = haystack_sentences(texts)
    if not hay:
        raise ValueError("no held-out sentence without digits to build the mini-RULER haystack from")
    return [build_item(task, n, hay, tok.encode, rng(seed, PAPER, "ruler", task, n, i), r.n_choices, r.n_keys,
                       r.n_values)
            for task in TASKS for n in r.lengths for i in range(r.items_per_task)]


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every (variant, seed) model; per-seed differences of the primary metric for the verdict."""
    tok = SmallTokenizer.load(paths.tokenizer)
    docs = read_parquet(paths.documents, columns=["split", "text"])
    heldout = read_parquet(paths.heldout, columns=["doc_id", "condition", "tokens", "n_tokens", "doc_start"])
    manifest = read_json(Path(paths.models) / "manifest.json")
    spec = ModelSpec.model_validate(manifest["model"])
    items = ruler_items(cfg, tok, docs[docs.split == "heldout"].text.tolist(), ctx.seed)
    gains: dict[str, list[dict[str, float]]] = {}
    ruler: dict[str, list[dict[str, dict[str, float]]]] = {}
    item_rows = [{"item": i, "task": it.task, "length": it.length, "prompt_tokens": len(it.prompt),
                  "chance": it.chance, "answers": ", ".join(it.answer_texts[a] for a in it.answers)}
                 for i, it in enumerate(items)]
    runs = [(v, s) for v in manifest["variants"] for s in range(manifest["n_seeds"])]
    for variant, s in tqdm(runs, desc="models", unit="model"):
        model = build_lm(spec, manifest["vocab_size"])
        model.load_state_dict(load_safetensors(Path(paths.models) / f"{variant}_s{s}.safetensors"))
        model.eval()
        gains.setdefault(variant, []).append(long_context_gain(model, heldout, cfg.evaluate.batch_size))
        scores = [rank_score(continuation_logprobs(model, it.prompt, it.choices), it.answers) for it in items]
        for row, score in zip(item_rows, scores, strict=True):
            row[f"{variant}_s{s}"] = score
        per = pd.DataFrame({"task": [it.task for it in items], "length": [it.length for it in items],
                            "score": scores}).groupby(["task", "length"]).score.mean()
        acc: dict[str, dict[str, float]] = {}
        for (task, length), v in per.items():
            acc.setdefault(task, {})[str(length)] = float(v)
        ruler.setdefault(variant, []).append(acc)
    g = {v: [r["gain"] for r in rows] for v, rows in gains.items()}
    per_seed = {}
    if {"entropylong", "no_verification"} <= set(g):
        per_seed["gain_entropylong_minus_no_verification"] = [a - b for a, b in
                                                              zip(g["entropylong"], g["no_verification"], strict=True)]
    if {"no_verification", "concatenation"} <= set(g):
        per_seed["gain_no_verification_minus_concatenation"] = [a - b for a, b in
                                                                zip(g["no_verification"], g["concatenation"],
                                                                    strict=True)]
    if {"entropylong", "concatenation"} <= set(g):
        per_seed["gain_entropylong_minus_concatenation"] = [a - b for a, b in
                                                            zip(g["entropylong"], g["concatenation"], strict=True)]
    chance = {t: float(np.mean([it.chance for it in items if it.task == t])) for t in TASKS}
    write_parquet(pd.DataFrame(item_rows), paths.ruler_items)
    write_json({"gains": gains, "ruler": ruler, "ruler_chance": chance, "ruler_lengths": cfg.evaluate.ruler.lengths,
                "per_seed": per_seed, "seeds": list(range(manifest["n_seeds"])), "variants": manifest["variants"],
                "heldout_docs": int(heldout.doc_id.nunique()),
                "heldout_doc_tokens": int((heldout[heldout.condition == "with_context"].n_tokens
                                           - heldout[heldout.condition == "with_context"].doc_start - 1).sum()),
                "train_len": manifest["seq_len"], "tokens_seen_per_run": manifest["tokens_seen_per_run"],
                "model": manifest["model"], "vocab_size": manifest["vocab_size"]}, paths.evaluation)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
