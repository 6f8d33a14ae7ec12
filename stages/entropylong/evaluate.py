"""Step ``evaluate``: the base model and every adapted model on ONE shared held-out set.

Each held-out document is scored three ways: after its retrieved contexts (shuffled), after as
many tokens of random pool text (same document position), and alone. Primary metric: the
content gain, loss after random text minus loss after the retrieved contexts, on the document's
body tokens (from ``exclude_first`` on, outside the start band where a topical context completes
the title); the same on all document tokens is reported beside it. The same sequences are scored
for every model, so no model is scored on its own variant's data. The learning rate is chosen
before any held-out scoring: the one whose adapters (every variant and seed) give the lowest
mean loss on the validation documents (training split, never trained on); only adapters of
that learning rate are scored on the held-out set. The validation and held-out losses of the
documents alone, beside the base model's, show whether the adapters forget.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm.auto import tqdm

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_json, read_parquet, write_json, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.entropylong.config import PAPER, EvaluateInputs, LoraSpec, load_evaluate
from stages.entropylong.expectations import doc_losses_suite
from stages.entropylong.lm import adapter_name, add_lora, load_lora, reset_lora, span_nll

CONDITIONS = ("without_context", "with_context", "random_context")
BASE = "base"


@dataclass(frozen=True)
class Paths:
    entropy_model: Path = inp("SmolLM2-135M asset (the base model)")
    heldout: Path = inp("shared held-out triples")
    validation: Path = inp("validation triples (the learning rate is chosen on the documents alone)")
    models: Path = inp("trained adapters")
    evaluation: Path = out("per-seed metrics and loss gains of every model (JSON)")
    doc_losses: Path = out("mean loss of every (model, held-out document, condition, span) (Parquet)")


def content_gains(nll: dict[str, float]) -> dict[str, float]:
    """gain = loss alone − loss after the contexts; content gain = loss after random text − after the contexts."""
    return {"gain": nll["without_context"] - nll["with_context"],
            "content_gain": nll["random_context"] - nll["with_context"]}


def document_losses(model: Any, heldout: pd.DataFrame, exclude_first: int, batch_size: int) -> pd.DataFrame:
    """Mean NLL per (document, condition) on all document tokens and on its body (tokens from ``exclude_first``)."""
    rows = heldout.sort_values(["doc_id", "condition"])
    seqs = rows.tokens.tolist()
    # the document runs from doc_start to the separator that ends the sequence
    losses = span_nll(model, seqs, rows.doc_start.tolist(), [len(s) - 1 for s in seqs], batch_size)
    out = []
    for r, loss in zip(rows.itertuples(index=False), losses, strict=True):
        if len(loss) <= exclude_first:
            raise ValueError(f"held-out document {r.doc_id} has no token after the first {exclude_first}")
        out.append({"doc_id": r.doc_id, "condition": r.condition, "all": float(loss.mean()),
                    "body": float(loss[exclude_first:].mean()), "n_tokens": len(loss)})
    return pd.DataFrame(out)


def summarise(losses: pd.DataFrame, exclude_first: int) -> dict[str, float]:
    """Token-weighted mean NLL per condition and span, and the gains on the body (primary) and on all tokens."""
    res: dict[str, float] = {}
    for span, key in (("body", ""), ("all", "_all")):
        nll = {}
        for condition in CONDITIONS:
            part = losses[losses.condition == condition]
            n = part.n_tokens - (exclude_first if span == "body" else 0)
            nll[condition] = float(np.average(part[span], weights=n))
        res |= {f"nll_{c.split('_')[0]}{key}": v for c, v in nll.items()}
        res |= {f"{k}{key}": v for k, v in content_gains(nll).items()}
    return res


def validation_loss(model: Any, validation: pd.DataFrame, batch_size: int) -> float:
    """Token-weighted mean NLL of the validation documents alone (all document tokens)."""
    validation = validation[validation.condition == "without_context"]
    seqs = validation.tokens.tolist()
    losses = span_nll(model, seqs, validation.doc_start.tolist(), [len(s) - 1 for s in seqs], batch_size)
    return float(np.concatenate(losses).mean())


def choose_lr(val_losses: dict[tuple[str, int, int], float], n_lrs: int) -> tuple[int, list[float]]:
    """The learning-rate index with the lowest validation loss averaged over every variant and seed (first on ties),
    and that mean for every index."""
    means = [float(np.mean([v for (_, _, i), v in val_losses.items() if i == k])) for k in range(n_lrs)]
    return int(np.argmin(means)), means


def per_seed_metrics(results: dict[str, list[dict[str, float]]], n_seeds: int) -> dict[str, list[float]]:
    """The verdict's per-seed values: paired differences of content gains, the base model's content gain (the positive
    control: the evaluation detects context use), the smallest adapted content gain and the largest rise of the
    loss of documents alone over the base model (forgetting), each on held-out body tokens."""
    g = {v: [r["content_gain"] for r in rows] for v, rows in results.items() if v != BASE}
    base = results[BASE][0]
    per_seed: dict[str, list[float]] = {}
    pairs = {"gain_entropylong_minus_no_verification": ("entropylong", "no_verification"),
             "gain_no_verification_minus_concatenation": ("no_verification", "concatenation"),
             "gain_entropylong_minus_concatenation": ("entropylong", "concatenation")}
    for name, (a, b) in pairs.items():
        if {a, b} <= set(g):
            per_seed[name] = [x - y for x, y in zip(g[a], g[b], strict=True)]
    if "entropylong" in g:
        per_seed["gain_entropylong_minus_base"] = [x - base["content_gain"] for x in g["entropylong"]]
    per_seed["content_gain_min"] = [min(g[v][s] for v in g) for s in range(n_seeds)]
    per_seed["base_content_gain"] = [base["content_gain"]] * n_seeds
    per_seed["alone_loss_rise_max"] = [max(results[v][s]["nll_without"] - base["nll_without"] for v in g)
                                       for s in range(n_seeds)]
    return dict(sorted(per_seed.items()))


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Choose the learning rate on validation; score the base model and every (variant, seed) adapter of that
    learning rate on the held-out set; per-seed differences for the verdict."""
    heldout = read_parquet(paths.heldout, columns=["doc_id", "condition", "tokens", "n_tokens", "doc_start"])
    validation = read_parquet(paths.validation, columns=["doc_id", "condition", "tokens", "n_tokens", "doc_start"])
    manifest = read_json(Path(paths.models) / "manifest.json")
    model, _ = load_causal_lm(paths.entropy_model)
    add_lora(model, LoraSpec.model_validate(manifest["lora"]))
    model.eval()
    lrs, n_seeds, variants = manifest["lrs"], manifest["n_seeds"], manifest["variants"]
    folder = Path(paths.models)
    reset_lora(model, 0)  # B = 0: exactly the base model
    base_val = validation_loss(model, validation, cfg.evaluate.batch_size)
    val_losses = {}
    for v, s, i in tqdm([(v, s, i) for i in range(len(lrs)) for v in variants for s in range(n_seeds)],
                        desc="validation", unit="model"):
        load_lora(model, load_safetensors(folder / adapter_name(v, s, i)))
        val_losses[(v, s, i)] = validation_loss(model, validation, cfg.evaluate.batch_size)
    chosen, lr_means = choose_lr(val_losses, len(lrs))
    frames = []
    results: dict[str, list[dict[str, float]]] = {}
    for variant, s in tqdm([(BASE, 0), *[(v, s) for v in variants for s in range(n_seeds)]], desc="held-out",
                           unit="model"):
        if variant == BASE:
            reset_lora(model, 0)
        else:
            load_lora(model, load_safetensors(folder / adapter_name(variant, s, chosen)))
        losses = document_losses(model, heldout, cfg.exclude_first, cfg.evaluate.batch_size)
        frames.append(losses.assign(model=variant, seed_index=s))
        row = summarise(losses, cfg.exclude_first)
        row["validation_loss"] = base_val if variant == BASE else val_losses[(variant, s, chosen)]
        results.setdefault(variant, []).append(row)
    doc_losses = pd.concat(frames, ignore_index=True)
    validate_table(doc_losses, f"{PAPER}.doc_losses", doc_losses_suite())
    per_seed = per_seed_metrics(results, n_seeds)
    lr_rows = [{"lr": lr, "mean_validation_loss": lr_means[i], "chosen": i == chosen,
                **{v: float(np.mean([val_losses[(v, s, i)] for s in range(n_seeds)])) for v in variants}}
               for i, lr in enumerate(lrs)]
    with_ctx = heldout[heldout.condition == "with_context"]
    write_parquet(doc_losses, paths.doc_losses)
    write_json({"gains": {v: rows for v, rows in results.items() if v != BASE}, "base": results[BASE][0],
                "per_seed": per_seed, "seeds": list(range(n_seeds)), "variants": variants,
                "lr": lrs[chosen], "lr_selection": lr_rows, "base_validation_loss": base_val,
                "validation_docs": int(validation.doc_id.nunique()),
                "heldout_docs": int(heldout.doc_id.nunique()),
                "heldout_doc_tokens": int((with_ctx.n_tokens - with_ctx.doc_start - 1).sum()),
                "heldout_context_tokens": int(with_ctx.doc_start.sum()),
                "train_len": manifest["seq_len"], "tokens_seen_per_run": manifest["tokens_seen_per_run"],
                "train_sequences": manifest["sequences"], "lora": manifest["lora"],
                "adapted_layers": manifest["adapted_layers"],
                "trainable_parameters": manifest["trainable_parameters"]}, paths.evaluation, finite=True)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
