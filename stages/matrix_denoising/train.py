"""Step ``train``: run RGD on every sampled instance and record the overlap trajectories."""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import map_runs
from stages.matrix_denoising.config import PAPER, TrainConfig, limit_threads, load_train
from stages.matrix_denoising.dynamics import overlap_trajectories_rgd
from stages.matrix_denoising.expectations import instances_suite, trajectories_suite
from stages.matrix_denoising.spiked_model import initial_vectors, sample_spiked_matrix


@dataclass(frozen=True)
class Paths:
    instances: Path = inp("instance specs")
    trajectories: Path = out("overlap trajectories (Parquet)")


def simulate_instance(group: pd.DataFrame, cfg: TrainConfig) -> pd.DataFrame:
    """All initial conditions of one matrix, run together as columns of (U, V)."""
    first = group.iloc[0]
    x, u_star, v_star = sample_spiked_matrix(int(first.p), int(first.n), float(first.lam), int(first.matrix_seed))
    starts = [initial_vectors(u_star, v_star, r.alpha_u, r.alpha_v, int(r.init_seed)) for r in group.itertuples()]
    u0 = np.stack([s[0] for s in starts], axis=1)
    v0 = np.stack([s[1] for s in starts], axis=1)
    n_steps = round(cfg.horizon / cfg.step_size)
    stride = round(cfg.record_every / cfg.step_size)
    t, qu, qv = overlap_trajectories_rgd(x, u_star, v_star, u0, v0, cfg.step_size, n_steps, stride)
    frames = [pd.DataFrame({"instance": first.instance, "init": name, "t": t, "q_u": qu[:, j], "q_v": qv[:, j]})
              for j, name in enumerate(group["init"])]
    return pd.concat(frames, ignore_index=True)


@dataclass(frozen=True)
class Shared:
    """What every instance's run reads: the config and the step's global thread budget."""

    cfg: TrainConfig
    threads: int


@cache
def limit_once(max_threads: int, threads: int) -> int:
    """``limit_threads`` once per process: a worker's NumPy BLAS pool is capped like the step's own."""
    return limit_threads(max_threads, threads)


def instance_run(group: pd.DataFrame, sh: Shared) -> pd.DataFrame:
    """One matrix's trajectories, from its own seeds (the instance table holds them)."""
    limit_once(sh.cfg.max_threads, sh.threads)
    return simulate_instance(group, sh.cfg)


def run(cfg: TrainConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Simulate every instance over ``threads / max_threads`` processes; one row per (instance, init, recorded t)."""
    limit_threads(cfg.max_threads, ctx.threads)
    instances = read_parquet(paths.instances)
    validate_table(instances, "matrix_denoising.instances", instances_suite)
    groups = [g for _, g in instances.groupby("instance", sort=True)]
    frames = map_runs(instance_run, groups, Shared(cfg, ctx.threads), threads=ctx.threads,
                      max_threads=cfg.max_threads, desc="RGD instances", unit="matrix")
    traj = pd.concat(frames, ignore_index=True)
    validate_table(traj, "matrix_denoising.trajectories", trajectories_suite)
    write_parquet(traj, paths.trajectories)
    return {"matrices": len(groups), "rows": len(traj)}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
