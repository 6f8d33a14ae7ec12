"""Step ``flow_studies``: exact finite-n gradient flows for three studies of the dynamics.

1. Finite-size scaling: overlaps at fixed times for n ∈ ``fss_sizes`` at fixed c, several λ
   on both sides of λ_c and near it.
2. Ratio scan: starts with α_u = −r·|stall ratio|·α_v for r around 1, full trajectories.
3. Transition grid: the long-time overlap on a fine λ grid.

Each matrix is sampled from a seed derived from (study, size, λ, seed index) and the flow is
solved exactly by Lanczos (``krylov.py``), so no step size enters.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, out
from stages.matrix_denoising.config import PAPER, FlowStudiesConfig, limit_threads, load_flow_studies
from stages.matrix_denoising.expectations import scaling_suite, scan_suite, transition_suite
from stages.matrix_denoising.krylov import exact_flow_overlaps
from stages.matrix_denoising.spiked_model import initial_vectors, sample_spiked_matrix
from stages.matrix_denoising.theory import stall_ratio


@dataclass(frozen=True)
class Paths:
    scaling: Path = out("overlaps at fixed times for each n (Parquet)")
    scan: Path = out("trajectories of the initial-overlap ratio scan (Parquet)")
    transition: Path = out("long-time overlaps on the fine λ grid (Parquet)")


def _starts(u_star: np.ndarray, v_star: np.ndarray, alphas: list[tuple[float, float]],
            seeds: list[int]) -> tuple[np.ndarray, np.ndarray]:
    """Initial vectors for each (α_u, α_v), stacked as columns."""
    pairs = [initial_vectors(u_star, v_star, au, av, s) for (au, av), s in zip(alphas, seeds, strict=True)]
    return np.stack([a for a, _ in pairs], axis=1), np.stack([b for _, b in pairs], axis=1)


def scaling_rows(cfg: FlowStudiesConfig, seed: int) -> pd.DataFrame:
    """Study 1: q_u, q_v at ``fss_times`` for every (n, λ, seed, init)."""
    frames = []
    jobs = [(p, n, lam, s) for p, n in cfg.fss_pairs for lam in cfg.fss_lambdas for s in range(cfg.n_seeds)]
    times = np.asarray(cfg.fss_times, dtype=float)
    for p, n, lam, s in tqdm(jobs, desc="scaling flows", unit="matrix"):
        x, u_star, v_star = sample_spiked_matrix(p, n, lam, derive_seed(seed, PAPER, "fss", n, f"{lam:.6f}", s))
        inits = cfg.fss_inits
        u0, v0 = _starts(u_star, v_star, [(i.alpha_u, i.alpha_v) for i in inits],
                         [derive_seed(seed, PAPER, "fss-init", n, f"{lam:.6f}", s, i.name) for i in inits])
        qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, times, cfg.fss_krylov_dim)
        for j, init in enumerate(inits):
            frames.append(pd.DataFrame({"n": n, "p": p, "lam": float(lam), "seed_index": s, "init": init.name,
                                        "alpha_u": init.alpha_u, "alpha_v": init.alpha_v, "t": times,
                                        "q_u": qu[:, j], "q_v": qv[:, j]}))
    return pd.concat(frames, ignore_index=True)


def scan_rows(cfg: FlowStudiesConfig, seed: int) -> pd.DataFrame:
    """Study 2: trajectories from α_u = r·ρ(λ)·α_v, ρ the predicted stall ratio, for each r."""
    c = cfg.scan_p / cfg.scan_n
    times = np.arange(0.0, cfg.scan_horizon + 1e-9, cfg.scan_record_every)
    frames = []
    jobs = [(lam, s) for lam in cfg.scan_lambdas for s in range(cfg.n_seeds)]
    for lam, s in tqdm(jobs, desc="ratio-scan flows", unit="matrix"):
        x, u_star, v_star = sample_spiked_matrix(cfg.scan_p, cfg.scan_n, lam,
                                                 derive_seed(seed, PAPER, "scan", f"{lam:.6f}", s))
        alphas = [(r * stall_ratio(lam, c) * cfg.scan_alpha_v, cfg.scan_alpha_v) for r in cfg.scan_ratios]
        # One orthogonal direction per matrix for every r: the scan varies the ratio alone.
        u0, v0 = _starts(u_star, v_star, alphas, [derive_seed(seed, PAPER, "scan-init", f"{lam:.6f}", s)] * len(alphas))
        qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, times, cfg.scan_krylov_dim)
        for j, (r, (au, av)) in enumerate(zip(cfg.scan_ratios, alphas, strict=True)):
            frames.append(pd.DataFrame({"lam": float(lam), "seed_index": s, "ratio": float(r), "alpha_u": au,
                                        "alpha_v": av, "t": times, "q_u": qu[:, j], "q_v": qv[:, j]}))
    return pd.concat(frames, ignore_index=True)


def transition_rows(cfg: FlowStudiesConfig, seed: int) -> pd.DataFrame:
    """Study 3: q_u, q_v at ``transition_time`` on the fine λ grid, ``transition_repeats`` matrices each."""
    rows = []
    init = cfg.transition_init
    jobs = [(lam, s, r) for lam in cfg.transition_lambdas for s in range(cfg.n_seeds)
            for r in range(cfg.transition_repeats)]
    for lam, s, r in tqdm(jobs, desc="transition flows", unit="matrix"):
        x, u_star, v_star = sample_spiked_matrix(cfg.transition_p, cfg.transition_n, lam,
                                                 derive_seed(seed, PAPER, "transition", f"{lam:.6f}", s, r))
        u0, v0 = _starts(u_star, v_star, [(init.alpha_u, init.alpha_v)],
                         [derive_seed(seed, PAPER, "transition-init", f"{lam:.6f}", s, r)])
        qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, np.array([cfg.transition_time]),
                                     cfg.transition_krylov_dim)
        rows.append({"p": cfg.transition_p, "n": cfg.transition_n, "lam": float(lam), "seed_index": s,
                     "repeat": r, "t": cfg.transition_time,
                     "q_u": float(qu[0, 0]), "q_v": float(qv[0, 0])})
    return pd.DataFrame(rows)


def run(cfg: FlowStudiesConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Run the three studies and write one validated table each."""
    limit_threads(cfg.max_threads, ctx.threads)
    scaling = scaling_rows(cfg, ctx.seed)
    validate_table(scaling, "matrix_denoising.scaling", scaling_suite)
    scan = scan_rows(cfg, ctx.seed)
    validate_table(scan, "matrix_denoising.scan", scan_suite)
    transition = transition_rows(cfg, ctx.seed)
    validate_table(transition, "matrix_denoising.transition", transition_suite)
    write_parquet(scaling, paths.scaling)
    write_parquet(scan, paths.scan)
    write_parquet(transition, paths.transition)
    return {"scaling_rows": len(scaling), "scan_rows": len(scan), "transition_rows": len(transition)}


main = Step(PAPER, "flow_studies", run, load_flow_studies, Paths)


if __name__ == "__main__":
    main()
