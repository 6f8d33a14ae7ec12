"""Step ``data``: render random pre-training scenes and held-out subjects with exact depth.

Pre-training scenes: ``views_per_scene`` views each at random poses. Each held-out subject (validation
and test, from random streams disjoint from the pre-training scenes): ``n_refs`` reference views at the
lowest grid elevation, evenly spaced in azimuth from a random grid azimuth; ``n_targets`` target poses
drawn from the rest of the pose grid (unseen poses); and a render at every grid pose (for pose accuracy).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.mvcustom.config import PAPER, DataConfig, load_data
from stages.mvcustom.expectations import views_suite
from stages.mvcustom.scene import Camera, random_scene, render


@dataclass(frozen=True)
class Paths:
    views: Path = out("one row per rendered view: split, scene, role, pose, tensor row (Parquet)")
    renders: Path = out("images (n, 3, s, s) in [0, 1] and z-depths (n, s, s) of every view (safetensors)")


def pose_grid(cfg: DataConfig) -> list[tuple[float, float]]:
    """Every (azimuth, elevation) of the grid, elevation-major."""
    return [(float(a), float(e)) for e in cfg.grid_elevations for a in range(0, 360, cfg.azimuth_step)]


def subject_poses(cfg: DataConfig, gen: np.random.Generator) -> tuple[list[tuple[float, float]],
                                                                       list[tuple[float, float]]]:
    """(reference poses, target poses): references evenly spaced at the lowest grid elevation, targets from the rest."""
    grid = pose_grid(cfg)
    start = int(gen.integers(0, 360 // cfg.azimuth_step)) * cfg.azimuth_step
    el = min(cfg.grid_elevations)
    refs = [(float((start + round(k * 360 / cfg.n_refs / cfg.azimuth_step) * cfg.azimuth_step) % 360), el)
            for k in range(cfg.n_refs)]
    rest = [p for p in grid if p not in refs]
    pick = gen.choice(len(rest), size=cfg.n_targets, replace=False)
    return refs, [rest[i] for i in sorted(pick)]


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Render every view; validate the table; write it and the tensors."""
    rows: list[dict[str, Any]] = []
    images, depths = [], []

    def add(scene: Any, split: str, index: int, role: str, view: int, az: float, el: float) -> None:
        img, depth = render(scene, Camera(az, el, cfg.radius, cfg.focal, cfg.image_size))
        rows.append({"split": split, "scene": index, "role": role, "view": view, "azimuth": az % 360,
                     "elevation": el, "row": len(rows)})
        images.append(img)
        depths.append(depth)

    gen = rng(ctx.seed, PAPER, "pretrain-scenes")
    lo, hi = cfg.elevation_range
    for i in tqdm(range(cfg.n_pretrain_scenes), desc="render pre-training scenes", unit="scene"):
        scene = random_scene(gen, cfg.max_objects)
        for v in range(cfg.views_per_scene):
            add(scene, "pretrain", i, "view", v, float(gen.uniform(0, 360)), float(gen.uniform(lo, hi)))
    for split, count in (("val", cfg.n_val_subjects), ("test", cfg.n_seeds)):
        for i in range(count):
            gen = rng(ctx.seed, PAPER, "subject", split, i)
            scene = random_scene(gen, cfg.max_objects)
            refs, targets = subject_poses(cfg, gen)
            for role, poses in (("ref", refs), ("target", targets)):
                for v, (az, el) in enumerate(poses):
                    add(scene, split, i, role, v, az, el)
            for v, (az, el) in enumerate(pose_grid(cfg)):
                add(scene, split, i, "grid", v, az, el)
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.views", views_suite(len(table)))
    write_parquet(table, paths.views)
    save_safetensors({"images": torch.as_tensor(np.stack(images), dtype=torch.float32),
                      "depth": torch.as_tensor(np.stack(depths), dtype=torch.float32)}, paths.renders)
    return {"n_views": len(table), "n_pretrain_scenes": cfg.n_pretrain_scenes}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
