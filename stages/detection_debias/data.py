"""Step ``data``: the biased training scenes and the balanced validation and test scenes (objects and images)."""

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
from stages.detection_debias.config import PAPER, DataConfig, load_data
from stages.detection_debias.expectations import objects_suite
from stages.detection_debias.scenes import balanced_scene, render, training_scene


@dataclass(frozen=True)
class Paths:
    objects: Path = out("one row per object: image, split, class, box (pixels, x1/y1 exclusive), group")
    images: Path = out("safetensors: images (n, 3, size, size) uint8, row = image id")


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Draw every scene and render it."""
    bins, plants = cfg.bins(), cfg.plants()
    rows, images = [], []
    for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test)):
        gen = rng(ctx.seed, PAPER, "scenes", split)
        for _ in tqdm(range(n), desc=f"scenes {split}", unit="scene", mininterval=2):
            scene = (training_scene(bins, plants, gen) if split == "train"
                     else balanced_scene(bins, cfg.max_objects, gen))
            image = len(images)
            rows += [{"image": image, "split": split, "cls": o.cls, "x0": o.box[0], "y0": o.box[1], "x1": o.box[2],
                      "y1": o.box[3], "group": bins.group_of_box(o.cls, o.box)} for o in scene.objects]
            images.append(render(scene, cfg.image_size))
    objects = pd.DataFrame(rows)
    validate_table(objects, f"{PAPER}.objects", objects_suite(len(objects), len(images), cfg.image_size,
                                                              bins.n_groups))
    write_parquet(objects, paths.objects)
    save_safetensors({"images": torch.from_numpy(np.stack(images))}, paths.images)
    return {"n_images": len(images), "n_objects": len(objects)}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
