"""Step ``adapt``: per seed, CoOp and SAPT prompts on a 16-shot sample, every knob tuned on the validation shifts,
then every method on the test shifts with its passes counted.

Methods: ``zero_shot`` (the eval prompt, p = 0), ``coop`` and ``sapt`` (tuned prompts, the test image only),
``tpt`` (one entropy step on the CoOp prompt per image, restored), ``zero`` (confident-view voting on the
CoOp prompt), ``fga_coop`` (sharpness-based selection on the CoOp prompt) and ``fga`` (SAPT + selection).
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch import nn
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.fga.config import PAPER, AdaptInputs, load_adapt
from stages.fga.expectations import results_suite
from stages.fga.io import load_clip_model, read_embeddings, read_views_table
from stages.fga.sapt import PassCounter, PromptedCLIP, coop_loss, prompt_sharpness, text_passes, tune_prompt
from stages.fga.selection import (
    PromptHeads,
    fga_predict,
    score_views,
    shared_heads,
    single_view_predict,
    tpt_predict,
    zero_predict,
)

METHODS = ["zero_shot", "coop", "sapt", "tpt", "zero", "fga_coop", "fga"]
SINGLE_VIEW = ("zero_shot", "coop", "sapt")


@dataclass(frozen=True)
class Paths:
    views: Path = inp("table of cached (image, condition) rows")
    embeddings: Path = inp("cached unit image embeddings of every view")
    clip: Path = inp("the trained CLIP")
    results: Path = out("accuracy per seed, split, method and shift (Parquet)")
    adaptation: Path = out("per seed: tuned knobs, validation grids, prompt sharpness, passes per test image (JSON)")


def few_shot(pool: pd.DataFrame, shots: int, gen: np.random.Generator) -> np.ndarray:
    """Rows of the pool tensor: ``shots`` images per class drawn without replacement."""
    return np.sort(np.concatenate([gen.choice(g.row.to_numpy(), size=shots, replace=False)
                                   for _, g in pool.groupby("label")]))


def tune_on_validation(model: PromptedCLIP, val: list[tuple[torch.Tensor, torch.Tensor]], coop: torch.Tensor,
                       sapt: dict[float, torch.Tensor], cfg: AdaptInputs,
                       gen: torch.Generator) -> dict[str, dict[str, float]]:
    """Mean validation accuracy of every knob setting of every method (keys are readable strings)."""
    a = cfg.adapt
    correct: dict[str, dict[str, float]] = {m: {} for m in ("coop", "sapt", "zero", "tpt", "fga_coop", "fga")}
    n = 0
    heads = {(method, rho): shared_heads(model, p, rho, a.n_perturbations, gen)
             for method, prompts in (("fga_coop", {r: coop for r in a.rho_grid}), ("fga", sapt))
             for rho, p in prompts.items()}

    def add(method: str, key: str, ok: bool) -> None:
        correct[method][key] = correct[method].get(key, 0.0) + float(ok)

    prompt = nn.Parameter(coop.clone())
    for emb, labels in val:
        for views, y in tqdm(list(zip(emb, labels.tolist(), strict=True)), desc="validation", unit="img",
                             leave=False):
            n += 1
            add("coop", "view=0", single_view_predict(model, views, coop) == y)
            for rho, p in sapt.items():
                add("sapt", f"rho={rho:g}", single_view_predict(model, views, p) == y)
            for k in a.keep_grid:
                add("zero", f"keep={k}", zero_predict(model, views, coop, k) == y)
                for lr in a.tpt_lr_grid:
                    add("tpt", f"keep={k},lr={lr:g}", tpt_predict(model, views, prompt, k, lr) == y)
            for (method, rho), h in heads.items():
                logits, ent, sharp = score_views(model, views, h)
                for k, lam in itertools.product(a.keep_grid, a.lambda_grid):
                    add(method, f"rho={rho:g},keep={k},lambda={lam:g}", fga_predict(logits, ent, sharp, lam, k) == y)
    return {m: {key: v / max(n, 1) for key, v in grid.items()} for m, grid in correct.items()}


def parse_knobs(key: str) -> dict[str, float]:
    """'rho=0.1,keep=4' -> {'rho': 0.1, 'keep': 4.0}."""
    return {k: float(v) for k, v in (part.split("=") for part in key.split(","))}


def best(grid: dict[str, float]) -> dict[str, float]:
    """The knobs of the highest validation accuracy (the first in grid order on ties)."""
    key = max(grid, key=lambda k: (grid[k], -list(grid).index(k)))
    return parse_knobs(key)


def predict(method: str, model: PromptedCLIP, views: torch.Tensor, prompts: dict[str, Any], knobs: dict[str, dict],
            heads: dict[str, PromptHeads]) -> int:
    """One method's prediction for one test image with its validation-chosen knobs."""
    kb = knobs.get(method, {})
    if method in SINGLE_VIEW:
        return single_view_predict(model, views, prompts[method])
    if method == "zero":
        return zero_predict(model, views, prompts["coop"], int(kb["keep"]))
    if method == "tpt":
        return tpt_predict(model, views, prompts["tpt"], int(kb["keep"]), kb["lr"])
    logits, ent, sharp = score_views(model, views, heads[method])  # the heads shared by every test image
    return fga_predict(logits, ent, sharp, kb["lambda"], int(kb["keep"]))


def run(cfg: AdaptInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Tune prompts per seed, choose knobs on validation shifts, evaluate and count passes on the test shifts."""
    a = cfg.adapt
    cap_threads(a.max_threads)
    table = read_views_table(paths.views)
    tensors = read_embeddings(paths.embeddings, table, cfg.n_views)
    clip, extra = load_clip_model(paths.clip, cfg.embed_dim, cfg.hidden)
    class_features, scale = extra["class_features"], float(clip.logit_scale())
    pool = table[table.tensor == "pool"]
    rows_of = table[table.tensor == "views"]
    groups = {(role, kind, int(sev)): g for (role, kind, sev), g in rows_of.groupby(["role", "kind", "severity"])}

    def condition(key: tuple[str, str, int]) -> tuple[torch.Tensor, torch.Tensor]:
        g = groups[key]
        return tensors["views"][g.row.to_numpy()], torch.as_tensor(g.label.to_numpy())

    val_keys = [k for k in groups if k[0] == "val"]
    test_keys = sorted(k for k in groups if k[0] == "test")
    results, per_seed = [], []
    for s in range(a.n_seeds):
        seed = derive_seed(ctx.seed, PAPER, "adapt", s)
        np_gen = np.random.default_rng(seed)
        torch.manual_seed(seed)
        shots = few_shot(pool, a.shots, np_gen)
        shot_emb = tensors["pool"][shots]
        shot_y = torch.as_tensor(pool.set_index("row").loc[shots].label.to_numpy())
        train_model = PromptedCLIP(clip.text, class_features, scale)

        def loss_fn(p: torch.Tensor, m: PromptedCLIP = train_model, e: torch.Tensor = shot_emb,
                    y: torch.Tensor = shot_y) -> torch.Tensor:
            return coop_loss(m, p, e, y)

        init = a.prompt_init_std * torch.randn(class_features.shape[-1], generator=torch.Generator().manual_seed(seed))
        coop, coop_losses = tune_prompt(loss_fn, init, a.steps, a.lr, None)
        sapt = {rho: tune_prompt(loss_fn, init, a.steps, a.lr, rho)[0] for rho in a.rho_grid}
        gen = torch.Generator().manual_seed(derive_seed(seed, "perturb", "val"))
        model = PromptedCLIP(clip.text, class_features, scale)
        grids = tune_on_validation(model, [condition(k) for k in val_keys], coop, sapt, cfg, gen)
        knobs = {m: best(g) for m, g in grids.items() if m != "coop"}
        rho = knobs["fga"]["rho"]
        prompts = {"zero_shot": torch.zeros_like(coop), "coop": coop, "sapt": sapt[rho],
                   "tpt": nn.Parameter(coop.clone())}
        sharpness = {f"{name}_rho={r:g}": prompt_sharpness(loss_fn, p, r, a.sharpness_ascent_steps)
                     for r in a.rho_grid for name, p in (("coop", coop), ("sapt", sapt[r]))}
        # one counter per method over every shifted test image; FGA's shared heads are counted once in its own
        counters = {m: PassCounter() for m in METHODS}
        gen = torch.Generator().manual_seed(derive_seed(seed, "perturb", "test"))
        heads = {m: shared_heads(PromptedCLIP(clip.text, class_features, scale, counters[m]),
                                 prompts["coop"] if m == "fga_coop" else prompts["sapt"], knobs[m]["rho"],
                                 a.n_perturbations, gen) for m in ("fga_coop", "fga")}
        n_shifted = 0
        for key in test_keys:
            emb, labels = condition(key)
            methods = SINGLE_VIEW if key[1] == "clean" else METHODS
            n_shifted += 0 if key[1] == "clean" else len(labels)
            for method in methods:
                counter = PassCounter() if key[1] == "clean" else counters[method]
                model = PromptedCLIP(clip.text, class_features, scale, counter)
                correct = [predict(method, model, views, prompts, knobs, heads) == y
                           for views, y in zip(emb, labels.tolist(), strict=True)]
                results.append({"seed_index": s, "split": "test", "method": method, "kind": key[1],
                                "severity": key[2], "accuracy": float(np.mean(correct)), "n_images": len(correct)})
        passes = {m: {f: v / n_shifted for f, v in c.snapshot().items()} for m, c in counters.items()}
        knobs["sapt"] = {"rho": rho}  # the SAPT arm is FGA's starting point: FGA's prompt without selection
        val_best = {m: grids[m][",".join(f"{k}={v:g}" for k, v in knobs[m].items())] for m in knobs}
        val_best["coop"] = grids["coop"]["view=0"]
        per_seed.append({
            "seed_index": s, "few_shot_rows": shots.tolist(), "knobs": knobs, "validation_grids": grids,
            "validation_best": val_best,
            "sharpness": sharpness, "sharpness_rho": rho,
            "sharpness_ratio": (sharpness[f"sapt_rho={rho:g}"] / sharpness[f"coop_rho={rho:g}"]
                                if sharpness[f"coop_rho={rho:g}"] > 0 else None),
            "coop_final_loss": coop_losses[-1],
            "passes_per_image": passes,
            "text_passes_fga_over_tpt": text_passes(passes["fga"]) / text_passes(passes["tpt"]),
        })
    frame = pd.DataFrame(results)
    validate_table(frame, f"{PAPER}.results", results_suite(len(frame), METHODS))
    write_parquet(frame, paths.results)
    write_json({"methods": METHODS, "n_seeds": a.n_seeds, "shots": a.shots, "n_views": cfg.n_views,
                "n_perturbations": a.n_perturbations, "views": cfg.views_policy,
                "test_conditions": [list(k) for k in test_keys], "val_conditions": [list(k) for k in val_keys],
                "n_test_images": len(groups[test_keys[0]]), "n_val_images": len(groups[val_keys[0]]),
                "n_pool": len(pool), "logit_scale": scale, "seeds": per_seed}, paths.adaptation, finite=True)
    shifted = frame[(frame.kind != "clean")].groupby("method").accuracy.mean()
    return {"shifted_accuracy": shifted.round(4).to_dict()}


main = Step(PAPER, "adapt", run, load_adapt, Paths)


if __name__ == "__main__":
    main()
