"""Step ``data``: the instance grid (λ × seeds × initial overlaps), as specs and seeds.

Matrices are never stored: each is regenerated bit-for-bit from ``matrix_seed``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, out
from stages.matrix_denoising.config import PAPER, DataConfig, limit_threads, load_data
from stages.matrix_denoising.expectations import instances_suite
from stages.matrix_denoising.theory import bbp_threshold, stall_ratio


@dataclass(frozen=True)
class Paths:
    instances: Path = out("instance specs (Parquet)")


def instance_rows(cfg: DataConfig, seed: int) -> list[dict[str, Any]]:
    """One row per (λ, seed, initial condition); the stall pair only well above λ_c."""
    c = cfg.p / cfg.n
    lam_c = bbp_threshold(c)
    rows = []
    for lam in sorted(cfg.lambdas):
        inits = [(i.name, i.alpha_u, i.alpha_v) for i in cfg.initial_overlaps]
        if lam >= lam_c + cfg.stall_min_gap:
            # Sec. 4: on α_u/α_v = stall_ratio the t→∞ sign is undefined; the mirror has the
            # same |α| off that set, so the pair isolates the effect of the ratio.
            alpha_u = stall_ratio(lam, c) * cfg.stall_alpha_v
            if abs(alpha_u) <= 1:
                inits += [("stall", alpha_u, cfg.stall_alpha_v), ("stall_mirror", -alpha_u, cfg.stall_alpha_v)]
        for s in range(cfg.n_seeds):
            instance = f"lam{lam:.3f}_s{s}"
            for name, au, av in inits:
                rows.append({"instance": instance, "lam": float(lam), "seed_index": s,
                             "matrix_seed": derive_seed(seed, PAPER, "matrix", f"{lam:.6f}", s),
                             "init": name, "alpha_u": float(au), "alpha_v": float(av),
                             "init_seed": derive_seed(seed, PAPER, "init", f"{lam:.6f}", s, name),
                             "p": cfg.p, "n": cfg.n})
    return rows


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the instance table."""
    limit_threads(cfg.max_threads, ctx.threads)
    df = pd.DataFrame(instance_rows(cfg, ctx.seed))
    validate_table(df, "matrix_denoising.instances", instances_suite)
    write_parquet(df, paths.instances)
    return {"rows": len(df), "matrices": df["instance"].nunique()}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
