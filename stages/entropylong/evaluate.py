"""Step ``evaluate``: the base model and every adapted model on ONE shared held-out set.

Each held-out document is scored three ways: after its retrieved contexts (shuffled), after as
many tokens of random pool text (same document position), and alone. Primary metric: the
content gain, loss after random text minus loss after the retrieved contexts, on the document's
body tokens (from ``exclude_first`` on, outside the start band where a topical context completes
the title); the same on all document tokens is reported beside it. The same sequences are scored
for every model, so no model is scored on its own variant's data.
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
from stages.entropylong.lm import add_lora, load_lora, reset_lora, span_nll

CONDITIONS = ("without_context", "with_context", "random_context")
BASE = "base"


@dataclass(frozen=True)
class Paths:
    entropy_model: Path = inp("SmolLM2-135M asset (the base model)")
    heldout: Path = inp("shared held-out triples")
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


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score the base model and every (variant, seed) adapter; per-seed differences for the verdict."""
    heldout = read_parquet(paths.heldout, columns=["doc_id", "condition", "tokens", "n_tokens", "doc_start"])
    manifest = read_json(Path(paths.models) / "manifest.json")
    model, _ = load_causal_lm(paths.entropy_model)
    add_lora(model, LoraSpec.model_validate(manifest["lora"]))
    model.eval()
    frames = []
    runs = [(BASE, 0), *[(v, s) for v in manifest["variants"] for s in range(manifest["n_seeds"])]]
    results: dict[str, list[dict[str, float]]] = {}
    for variant, s in tqdm(runs, desc="models", unit="model"):
        if variant == BASE:
            reset_lora(model, 0)  # B = 0: exactly the base model
        else:
            load_lora(model, load_safetensors(Path(paths.models) / f"{variant}_s{s}.safetensors"))
        losses = document_losses(model, heldout, cfg.exclude_first, cfg.evaluate.batch_size)
        frames.append(losses.assign(model=variant, seed_index=s))
        results.setdefault(variant, []).append(summarise(losses, cfg.exclude_first))
    doc_losses = pd.concat(frames, ignore_index=True)
    validate_table(doc_losses, f"{PAPER}.doc_losses", doc_losses_suite())
    g = {v: [r["content_gain"] for r in rows] for v, rows in results.items() if v != BASE}
    base = results[BASE][0]["content_gain"]
    per_seed: dict[str, list[float]] = {}
    pairs = {"gain_entropylong_minus_no_verification": ("entropylong", "no_verification"),
             "gain_no_verification_minus_concatenation": ("no_verification", "concatenation"),
             "gain_entropylong_minus_concatenation": ("entropylong", "concatenation")}
    for name, (a, b) in pairs.items():
        if {a, b} <= set(g):
            per_seed[name] = [x - y for x, y in zip(g[a], g[b], strict=True)]
    if "entropylong" in g:
        per_seed["gain_entropylong_minus_base"] = [x - base for x in g["entropylong"]]
    per_seed["content_gain_min"] = [min(g[v][s] for v in g) for s in range(manifest["n_seeds"])]
    per_seed = dict(sorted(per_seed.items()))
    with_ctx = heldout[heldout.condition == "with_context"]
    write_parquet(doc_losses, paths.doc_losses)
    write_json({"gains": {v: rows for v, rows in results.items() if v != BASE}, "base": results[BASE][0],
                "per_seed": per_seed, "seeds": list(range(manifest["n_seeds"])), "variants": manifest["variants"],
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
