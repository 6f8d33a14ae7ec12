"""Step ``fit``: NDM on the LM's fitting activations, one fit per seed, and the baselines cut into its sizes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import load_safetensors, save_safetensors, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.ndm.config import PAPER, FitConfig, load_fit
from stages.ndm.expectations import curves_suite
from stages.ndm.ndm import fit_ndm, pca_rotation, random_rotation


@dataclass(frozen=True)
class Paths:
    activations: Path = inp("fitting activations")
    subspaces: Path = out("rotations of every method and NDM's subspace sizes, per seed (safetensors)")
    fit_curves: Path = out("NDM training loss per seed and step (Parquet)")


def standardise(x: torch.Tensor) -> torch.Tensor:
    """Centre, and scale so the mean squared coordinate is 1 (rotations are unaffected)."""
    xc = x - x.mean(dim=0)
    return xc / xc.pow(2).mean().sqrt()


def run(cfg: FitConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """One NDM fit per seed; identity, random and PCA rotations beside it."""
    cap_threads(cfg.max_threads)
    x = standardise(load_safetensors(paths.activations)["x"].float())
    d = x.shape[1]
    n = cfg.ndm
    if d % n.init_block:
        raise ValueError(f"hidden size {d} is not a multiple of init_block {n.init_block}")
    if n.batch_size > len(x) or n.mi_points > len(x):
        raise ValueError(f"batch_size and mi_points must not exceed the {len(x)} fitting activations")
    pca = pca_rotation(x)
    tensors: dict[str, torch.Tensor] = {}
    curves = []
    total = cfg.n_seeds * (n.restarts * n.steps + n.rounds * n.finetune_steps)
    with tqdm(total=total, desc="LM NDM steps", unit="step") as bar:
        for s in range(cfg.n_seeds):
            seed = derive_seed(ctx.seed, PAPER, "fit", s)
            result = fit_ndm(x, n.init_block, n.restarts, n.steps, n.finetune_steps, n.rounds, n.lr, n.batch_size,
                             n.merge_threshold, n.ksg_k, n.mi_points, n.max_block, seed, bar.update)
            gen = torch.Generator().manual_seed(derive_seed(seed, "random"))
            tensors |= {f"ndm/{s}": result.rotation, f"identity/{s}": torch.eye(d),
                        f"random/{s}": random_rotation(d, gen), f"pca/{s}": pca.clone(),
                        f"sizes/{s}": torch.tensor(result.sizes, dtype=torch.int64)}
            curves.append(pd.DataFrame({"seed": s, "step": np.arange(len(result.losses)), "loss": result.losses}))
    curves_df = pd.concat(curves, ignore_index=True)
    validate_table(curves_df, "ndm.fit_curves", curves_suite)
    save_safetensors(tensors, paths.subspaces)
    write_parquet(curves_df, paths.fit_curves)
    return {"seeds": cfg.n_seeds, "subspaces": [len(tensors[f"sizes/{s}"]) for s in range(cfg.n_seeds)]}


main = Step(PAPER, "fit", run, load_fit, Paths)


if __name__ == "__main__":
    main()
