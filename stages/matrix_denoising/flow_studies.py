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
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, out
from stages.core.workers import map_runs
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


def scaling_jobs(cfg: FlowStudiesConfig) -> list[tuple[Any, ...]]:
    """Study 1's matrices: (p, n, λ, seed index)."""
    return [("fss", p, n, lam, s) for p, n in cfg.fss_pairs for lam in cfg.fss_lambdas for s in range(cfg.n_seeds)]


def scaling_run(p: int, n: int, lam: float, s: int, cfg: FlowStudiesConfig, seed: int) -> pd.DataFrame:
    """Study 1, one matrix: q_u, q_v at ``fss_times`` for every init."""
    times = np.asarray(cfg.fss_times, dtype=float)
    x, u_star, v_star = sample_spiked_matrix(p, n, lam, derive_seed(seed, PAPER, "fss", n, f"{lam:.6f}", s))
    inits = cfg.fss_inits
    u0, v0 = _starts(u_star, v_star, [(i.alpha_u, i.alpha_v) for i in inits],
                     [derive_seed(seed, PAPER, "fss-init", n, f"{lam:.6f}", s, i.name) for i in inits])
    qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, times, cfg.fss_krylov_dim)
    return pd.concat([pd.DataFrame({"n": n, "p": p, "lam": float(lam), "seed_index": s, "init": init.name,
                                    "alpha_u": init.alpha_u, "alpha_v": init.alpha_v, "t": times,
                                    "q_u": qu[:, j], "q_v": qv[:, j]}) for j, init in enumerate(inits)],
                     ignore_index=True)


def scan_jobs(cfg: FlowStudiesConfig) -> list[tuple[Any, ...]]:
    """Study 2's matrices: (λ, seed index)."""
    return [("scan", lam, s) for lam in cfg.scan_lambdas for s in range(cfg.n_seeds)]


def scan_run(lam: float, s: int, cfg: FlowStudiesConfig, seed: int) -> pd.DataFrame:
    """Study 2, one matrix: trajectories from α_u = r·ρ(λ)·α_v, ρ the predicted stall ratio, for each r."""
    c = cfg.scan_p / cfg.scan_n
    times = np.arange(0.0, cfg.scan_horizon + 1e-9, cfg.scan_record_every)
    x, u_star, v_star = sample_spiked_matrix(cfg.scan_p, cfg.scan_n, lam,
                                             derive_seed(seed, PAPER, "scan", f"{lam:.6f}", s))
    alphas = [(r * stall_ratio(lam, c) * cfg.scan_alpha_v, cfg.scan_alpha_v) for r in cfg.scan_ratios]
    # One orthogonal direction per matrix for every r: the scan varies the ratio alone.
    u0, v0 = _starts(u_star, v_star, alphas, [derive_seed(seed, PAPER, "scan-init", f"{lam:.6f}", s)] * len(alphas))
    qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, times, cfg.scan_krylov_dim)
    return pd.concat([pd.DataFrame({"lam": float(lam), "seed_index": s, "ratio": float(r), "alpha_u": au,
                                    "alpha_v": av, "t": times, "q_u": qu[:, j], "q_v": qv[:, j]})
                      for j, (r, (au, av)) in enumerate(zip(cfg.scan_ratios, alphas, strict=True))], ignore_index=True)


def transition_jobs(cfg: FlowStudiesConfig) -> list[tuple[Any, ...]]:
    """Study 3's matrices: (λ, seed index, repeat)."""
    return [("transition", lam, s, r) for lam in cfg.transition_lambdas for s in range(cfg.n_seeds)
            for r in range(cfg.transition_repeats)]


def transition_run(lam: float, s: int, r: int, cfg: FlowStudiesConfig, seed: int) -> dict[str, Any]:
    """Study 3, one matrix: q_u, q_v at ``transition_time``."""
    init = cfg.transition_init
    x, u_star, v_star = sample_spiked_matrix(cfg.transition_p, cfg.transition_n, lam,
                                             derive_seed(seed, PAPER, "transition", f"{lam:.6f}", s, r))
    u0, v0 = _starts(u_star, v_star, [(init.alpha_u, init.alpha_v)],
                     [derive_seed(seed, PAPER, "transition-init", f"{lam:.6f}", s, r)])
    qu, qv = exact_flow_overlaps(x, u_star, v_star, u0, v0, np.array([cfg.transition_time]),
                                 cfg.transition_krylov_dim)
    return {"p": cfg.transition_p, "n": cfg.transition_n, "lam": float(lam), "seed_index": s, "repeat": r,
            "t": cfg.transition_time, "q_u": float(qu[0, 0]), "q_v": float(qv[0, 0])}


@dataclass(frozen=True)
class Shared:
    """What every matrix's run reads: the config, the global seed and the step's thread budget."""

    cfg: FlowStudiesConfig
    seed: int
    threads: int


@cache
def limit_once(max_threads: int, threads: int) -> int:
    """``limit_threads`` once per process: a worker's NumPy BLAS pool is capped like the step's own."""
    return limit_threads(max_threads, threads)


def flow_run(job: tuple[Any, ...], sh: Shared) -> pd.DataFrame | dict[str, Any]:
    """One matrix of any study, seeded from its job alone (the study's name comes first)."""
    limit_once(sh.cfg.max_threads, sh.threads)
    study, *args = job
    fn = {"fss": scaling_run, "scan": scan_run, "transition": transition_run}[study]
    return fn(*args, sh.cfg, sh.seed)


def run(cfg: FlowStudiesConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every matrix of the three studies over ``threads / max_threads`` processes; one validated table each."""
    limit_threads(cfg.max_threads, ctx.threads)
    fss, scan, trans = scaling_jobs(cfg), scan_jobs(cfg), transition_jobs(cfg)
    results = map_runs(flow_run, fss + scan + trans, Shared(cfg, ctx.seed, ctx.threads), threads=ctx.threads,
                       max_threads=cfg.max_threads, desc="flows (scaling, ratio scan, transition)", unit="matrix")
    scaling = pd.concat(results[:len(fss)], ignore_index=True)
    validate_table(scaling, "matrix_denoising.scaling", scaling_suite)
    scan_table = pd.concat(results[len(fss):len(fss) + len(scan)], ignore_index=True)
    validate_table(scan_table, "matrix_denoising.scan", scan_suite)
    transition = pd.DataFrame(results[len(fss) + len(scan):])
    validate_table(transition, "matrix_denoising.transition", transition_suite)
    write_parquet(scaling, paths.scaling)
    write_parquet(scan_table, paths.scan)
    write_parquet(transition, paths.transition)
    return {"scaling_rows": len(scaling), "scan_rows": len(scan_table), "transition_rows": len(transition)}


main = Step(PAPER, "flow_studies", run, load_flow_studies, Paths)


if __name__ == "__main__":
    main()
