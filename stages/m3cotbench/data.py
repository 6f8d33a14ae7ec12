"""Step ``data``: the procedural scans (train / validation / test) and their true scenes."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.m3cotbench.config import PAPER, DataConfig, load_data
from stages.m3cotbench.expectations import scenes_suite
from stages.m3cotbench.scene import render, sample_scene


@dataclass(frozen=True)
class Paths:
    scenes: Path = out("one row per scan: split and true scene (modality, shape, radius, location, level)")
    images: Path = out("safetensors: images (n_scans, 32, 32) float32, row = scan")


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Draw every scene and render its scan."""
    rows, images = [], []
    for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test)):
        gen = rng(ctx.seed, PAPER, "scenes", split)
        for _ in range(n):
            s = sample_scene(gen)
            rows.append({"scan": len(rows), "split": split, **asdict(s)})
            images.append(render(s, gen))
    scenes = pd.DataFrame(rows)
    validate_table(scenes, f"{PAPER}.scenes", scenes_suite(len(scenes)))
    write_parquet(scenes, paths.scenes)
    save_safetensors({"images": torch.from_numpy(np.stack(images))}, paths.images)
    return {"n_scans": len(scenes), **scenes.split.value_counts().to_dict()}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
