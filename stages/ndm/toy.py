"""Step ``toy``: a tied ReLU autoencoder on grouped sparse features; NDM and baselines vs the true groups (Sec. 4)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, out
from stages.core.threads import cap_threads
from stages.ndm.config import PAPER, ToyConfig, load_toy
from stages.ndm.expectations import curves_suite, toy_results_suite
from stages.ndm.ndm import fit_ndm, pca_rotation, random_rotation
from stages.ndm.scores import adjusted_rand_index, dimension_purity, energy_concentration, subspace_assignment
from stages.ndm.superposition import (
    TiedAutoencoder,
    feature_groups,
    oracle_rotation,
    sample_grouped_features,
    train_autoencoder,
)


@dataclass(frozen=True)
class Paths:
    toy_results: Path = out("per seed and method: ARI, energy concentration, dimension purity (Parquet)")
    toy_curves: Path = out("NDM training loss per seed and step (Parquet)")


def score_rows(w: np.ndarray, groups: np.ndarray, rotations: dict[str, tuple[np.ndarray, list[int]]]
               ) -> list[dict[str, Any]]:
    """ARI of the feature-to-subspace assignment, energy concentration and dimension purity per method."""
    rows = []
    for method, (rot, sizes) in rotations.items():
        rows.append({"method": method,
                     "ari": adjusted_rand_index(groups, subspace_assignment(rot, sizes, w.T)),
                     "energy_concentration": energy_concentration(rot, sizes, w.T),
                     "dimension_purity": dimension_purity(rot, w.T, groups),
                     "n_subspaces": len(sizes), "sizes": ",".join(map(str, sizes))})
    return rows


def run_seed(cfg: ToyConfig, seed: int, progress: Any) -> tuple[list[dict[str, Any]], pd.DataFrame]:
    """One seed: train the autoencoder, sample activations, fit NDM, score NDM, baselines and the oracle."""
    gen = torch.Generator().manual_seed(seed)
    n_features = cfg.n_groups * cfg.group_size
    ae = TiedAutoencoder(n_features, cfg.hidden, gen)
    ae_losses = train_autoencoder(ae, cfg.n_groups, cfg.group_size, cfg.p_active, cfg.ae_steps,
                                  cfg.ae_batch_size, cfg.ae_lr, gen)
    x = sample_grouped_features(cfg.n_points, cfg.n_groups, cfg.group_size, cfg.p_active, gen)
    with torch.no_grad():
        h = ae.encode(x) + cfg.noise * torch.randn(cfg.n_points, cfg.hidden, generator=gen)
    n = cfg.ndm
    fit = fit_ndm(h, n.init_block, n.restarts, n.steps, n.finetune_steps, n.rounds, n.lr, n.batch_size,
                  n.merge_threshold, n.ksg_k, n.mi_points, n.max_block, derive_seed(seed, "ndm"), progress)
    w = ae.w.detach().double().numpy()
    groups = feature_groups(cfg.n_groups, cfg.group_size)
    sizes = fit.sizes
    rotations = {"ndm": (fit.rotation.double().numpy(), sizes),
                 "identity": (np.eye(cfg.hidden), sizes),
                 "random": (random_rotation(cfg.hidden, gen).double().numpy(), sizes),
                 "pca": (pca_rotation(h).double().numpy(), sizes),
                 "oracle": oracle_rotation(w, groups)}
    rows = score_rows(w, groups, rotations)
    ae_loss = float(np.mean(ae_losses[-max(1, cfg.ae_steps // 10):]))
    for r in rows:
        r |= {"ae_loss": ae_loss, "n_merges": len(fit.merges)}
    curve = pd.DataFrame({"step": np.arange(len(fit.losses)), "loss": fit.losses})
    return rows, curve


def run(cfg: ToyConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """All seeds; one results row per (seed, method)."""
    cap_threads(cfg.max_threads)
    n = cfg.ndm
    total = cfg.n_seeds * (n.restarts * n.steps + n.rounds * n.finetune_steps)
    rows, curves = [], []
    with tqdm(total=total, desc="toy NDM steps", unit="step") as bar:
        for s in range(cfg.n_seeds):
            seed_rows, curve = run_seed(cfg, derive_seed(ctx.seed, PAPER, "toy", s), bar.update)
            rows += [{"seed": s, **r} for r in seed_rows]
            curves.append(curve.assign(seed=s))
    results = pd.DataFrame(rows)
    curves_df = pd.concat(curves, ignore_index=True)[["seed", "step", "loss"]]
    validate_table(results, "ndm.toy_results", toy_results_suite)
    validate_table(curves_df, "ndm.toy_curves", curves_suite)
    write_parquet(results, paths.toy_results)
    write_parquet(curves_df, paths.toy_curves)
    ndm_ari = results[results.method == "ndm"].ari.mean()
    return {"seeds": cfg.n_seeds, "mean_ndm_ari": float(ndm_ari)}


main = Step(PAPER, "toy", run, load_toy, Paths)


if __name__ == "__main__":
    main()
