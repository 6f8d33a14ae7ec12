"""Step ``generator``: the blueprint-conditioned generator trained on the training scenes only (L1 reconstruction
from each scene's blueprint and colours; scenes drawn class-balanced, so the rare class is seen), and its
reconstruction error on the validation scenes."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch

from stages.core.io import save_safetensors, write_json
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.detection_debias.blueprint_generator import (
    BlueprintGenerator,
    class_balanced_weights,
    conditions,
    generate,
    mean_l1,
    train_generator,
)
from stages.detection_debias.config import PAPER, GeneratorInputs, load_generator
from stages.detection_debias.io import layouts_of, read_images, read_objects
from stages.detection_debias.scenes import CLASSES


@dataclass(frozen=True)
class Paths:
    objects: Path = inp("object table")
    images: Path = inp("images")
    generator: Path = out("safetensors: the generator's weights")
    generator_log: Path = out("JSON: training L1 curve, validation L1 of the generator and of its untrained start")


def run(cfg: GeneratorInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train the generator on the training scenes; measure it on the validation scenes."""
    g, d = cfg.generator, cfg.data
    cap_threads(g.max_threads)
    objects = read_objects(paths.objects, d.bins())
    images = read_images(paths.images, int(objects.image.max()) + 1, d.image_size)
    by_image = layouts_of(objects)
    ids = {s: np.sort(objects[objects.split == s].image.unique()) for s in ("train", "val")}
    cond = {s: conditions([by_image[int(i)] for i in ids[s]], images[ids[s]]) for s in ids}
    seed = derive_seed(ctx.seed, PAPER, "generator")
    torch.manual_seed(seed % 2**63)
    untrained = BlueprintGenerator(g.width).eval()
    weights = class_balanced_weights([[c for c, _ in by_image[int(i)]] for i in ids["train"]], len(CLASSES))
    model, losses = train_generator(cond["train"], images[ids["train"]], g.width, g.lr, g.batch_size, g.steps, seed,
                                    g.log_every, weights)
    log = {"loss": losses, "val_l1": mean_l1(generate(model, cond["val"]), images[ids["val"]]),
           "val_l1_untrained": mean_l1(generate(untrained, cond["val"]), images[ids["val"]]),
           "n_train": len(ids["train"])}
    write_json(log, paths.generator_log, finite=True)
    save_safetensors({k: v.detach().clone() for k, v in model.state_dict().items()}, paths.generator)
    return {"val_l1": log["val_l1"]}


main = Step(PAPER, "generator", run, load_generator, Paths)


if __name__ == "__main__":
    main()
