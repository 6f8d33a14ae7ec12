"""Step ``patch``: patch one subspace at a time on the kept prompts; the Gini of the effects (Sec. 5).

For each kept patching prompt, the corrupted prompt's residual at the site replaces the clean one inside
one subspace only (h_clean + P_S (h_corrupted − h_clean)); the effect of subspace S is the drop of the
logit difference. Every method's subspaces (NDM and the baselines cut into NDM's sizes, per seed) are
patched in batches that share the clean prefix's cached keys/values.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_parquet, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.ndm.config import METHODS, PAPER, ActivationsConfig, PatchConfig, load_activations, load_patch
from stages.ndm.expectations import competence_suite, effects_suite, patch_prompts_suite, prompts_suite
from stages.ndm.lm import answer_ids, encode
from stages.ndm.patching import last_position_residual, patched_last_position, prefix_cache, subspace_patches
from stages.ndm.scores import gini


class PatchInputs(PatchConfig):
    """The patch step's own section and the site it patches."""

    layer: int


def load_inputs(params: Path) -> PatchInputs:
    """``ndm.patch`` and the layer of ``ndm.activations``."""
    site: ActivationsConfig = load_activations(params)
    return PatchInputs(**load_patch(params).model_dump(), layer=site.layer)


@dataclass(frozen=True)
class Paths:
    prompts: Path = inp("prompts")
    competence: Path = inp("competence table (which patching prompts are kept)")
    subspaces: Path = inp("rotations and sizes per seed")
    lm: Path = inp("SmolLM2-135M asset")
    patch_effects: Path = out("effect of patching each subspace, per seed, method and prompt (Parquet)")
    patch_prompts: Path = out("per seed, method and prompt: clean and fully patched logit difference, Gini (Parquet)")


def run(cfg: PatchInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Patch every subspace of every method and seed on every kept prompt."""
    cap_threads(cfg.max_threads)
    prompts = read_parquet(paths.prompts)
    validate_table(prompts, "ndm.prompts", prompts_suite)
    competence = read_parquet(paths.competence)
    validate_table(competence, "ndm.competence", competence_suite)
    kept = prompts.merge(competence[competence.kept][["prompt_id", "clean_ld"]], on="prompt_id")
    sub = load_safetensors(paths.subspaces)
    seeds = sorted(int(k.split("/")[1]) for k in sub if k.startswith("sizes/"))
    variants = [(s, m, sub[f"{m}/{s}"].double(), sub[f"sizes/{s}"].tolist()) for s in seeds for m in METHODS]
    model, tokenizer = load_causal_lm(paths.lm)

    effects, summaries = [], []
    for p in tqdm(list(kept.itertuples()), desc="patching prompts", unit="prompt"):
        ids = torch.tensor([encode(tokenizer, p.text)])
        cids = torch.tensor([encode(tokenizer, p.corrupted)])
        good, bad = answer_ids(tokenizer, list(p.good)), answer_ids(tokenizer, list(p.bad))
        cache = prefix_cache(model, ids)
        clean_ld, h_clean = patched_last_position(model, ids, cache, cfg.layer, None, good, bad)
        h_corr = last_position_residual(model, cids, cfg.layer)[0]
        rows = [h_corr[None]] + [subspace_patches(h_clean.double(), h_corr.double(), rot, sizes).float()
                                 for _, _, rot, sizes in variants]
        ld, _ = patched_last_position(model, ids, cache, cfg.layer, torch.cat(rows), good, bad)
        base = float(clean_ld[0])
        full = float(ld[0])
        start = 1
        for s, m, _, sizes in variants:
            eff = (base - ld[start:start + len(sizes)]).tolist()
            start += len(sizes)
            effects += [{"seed": s, "method": m, "prompt_id": p.prompt_id, "task": p.task, "subspace": k,
                         "size": int(sizes[k]), "effect": float(e)} for k, e in enumerate(eff)]
            summaries.append({"seed": s, "method": m, "prompt_id": p.prompt_id, "task": p.task, "clean_ld": base,
                              "full_patch_ld": full, "sum_abs_effect": float(sum(abs(e) for e in eff)),
                              "gini": gini(eff)})
    effects_df, summary_df = pd.DataFrame(effects), pd.DataFrame(summaries)
    validate_table(effects_df, "ndm.patch_effects", effects_suite)
    validate_table(summary_df, "ndm.patch_prompts", patch_prompts_suite)
    write_parquet(effects_df, paths.patch_effects)
    write_parquet(summary_df, paths.patch_prompts)
    return {"prompts": len(kept), "patched_runs": len(effects_df) + len(kept)}


main = Step(PAPER, "patch", run, load_inputs, Paths)


if __name__ == "__main__":
    main()
