"""Step ``baseline``: per seed, the detector trained on the biased training set alone (the ``none`` arm); the
representation score of every group from its ROI features; the synthetic layouts of every augmentation arm."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed, rng
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.detection_debias.augment import layouts_table, reused_layouts, sampled_layouts
from stages.detection_debias.config import PAPER, BaselineInputs, load_baseline
from stages.detection_debias.detector import roi_and_context, targets, train_detector
from stages.detection_debias.expectations import groups_suite, layouts_suite
from stages.detection_debias.io import layouts_of, read_images, read_objects
from stages.detection_debias.representation import group_scores, sampling_probabilities
from stages.detection_debias.scenes import CLASSES


@dataclass(frozen=True)
class Paths:
    objects: Path = inp("object table")
    images: Path = inp("images")
    baseline: Path = out("safetensors: the baseline detector's weights per seed (seed<i>.*)")
    groups: Path = out("per (seed, group): count, frequency term, diversities, RS, sampler probabilities")
    layouts: Path = out("per (seed, arm): the synthetic layouts, one row per object")
    baseline_log: Path = out("JSON: per seed, the baseline's training loss curve")


def run(cfg: BaselineInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train the baselines, score the groups, sample the layouts."""
    d, a, det = cfg.data, cfg.augment, cfg.detector
    cap_threads(det.max_threads)
    bins = d.bins()
    objects = read_objects(paths.objects, bins)
    images = read_images(paths.images, int(objects.image.max()) + 1, d.image_size)
    train_ids = np.sort(objects[objects.split == "train"].image.unique())
    by_image = layouts_of(objects)
    train_layouts = [by_image[int(i)] for i in train_ids]
    tgt = targets(train_layouts, len(CLASSES), d.image_size)
    train_obj = objects[objects.split == "train"].sort_values(["image", "x0", "y0"], ignore_index=True)
    row_of = {int(img): r for r, img in enumerate(train_ids)}
    weights, group_rows, layout_frames, log = {}, [], [], []
    for s in range(det.n_seeds):
        model, losses = train_detector(images[train_ids], tgt, len(CLASSES), det.width, det.lr, det.batch_size,
                                       det.trainer, derive_seed(ctx.seed, PAPER, "detector", s),
                                       f"baseline detector, seed {s}")
        weights.update({f"seed{s}.{k}": v.detach().clone() for k, v in model.state_dict().items()})
        log.append({"seed_index": s, "loss": losses})
        roi, context = roi_and_context(model, images[train_ids], np.array([row_of[int(i)] for i in train_obj.image]),
                                       train_obj[["x0", "y0", "x1", "y1"]].to_numpy(float))
        sc = group_scores(train_obj.group.to_numpy(), roi, context, bins.n_groups, a.beta, a.diversity,
                          a.max_per_group, rng(ctx.seed, PAPER, "diversity", s))
        probs = {"inverse_frequency": sampling_probabilities(sc["frequency"], a.eps, a.tau),
                 "rs": sampling_probabilities(sc["rs"], a.eps, a.tau)}
        group_rows.append(pd.DataFrame({"seed_index": s, "group": np.arange(bins.n_groups),
                                        **{k: sc[k] for k in ("count", "frequency", "d_vis", "d_ctx", "d_vis_norm",
                                                              "d_ctx_norm", "rs")},
                                        "p_inverse_frequency": probs["inverse_frequency"], "p_rs": probs["rs"]}))
        for arm in ("reused", "inverse_frequency", "rs"):
            gen = rng(ctx.seed, PAPER, "layouts", arm, s)
            layouts = (reused_layouts(train_layouts, a.n_synthetic, gen) if arm == "reused"
                       else sampled_layouts(bins, probs[arm], a.n_synthetic, d.max_objects, gen))
            layout_frames.append(layouts_table(layouts, bins, seed_index=s, arm=arm))
    groups = pd.concat(group_rows, ignore_index=True)
    layouts = pd.concat(layout_frames, ignore_index=True)
    validate_table(groups, f"{PAPER}.groups", groups_suite(len(groups), bins.n_groups))
    validate_table(layouts, f"{PAPER}.layouts", layouts_suite(len(layouts), d.image_size, bins.n_groups, det.n_seeds))
    write_json(log, paths.baseline_log, finite=True)
    write_parquet(groups, paths.groups)
    write_parquet(layouts, paths.layouts)
    save_safetensors(weights, paths.baseline)
    return {"n_layout_objects": len(layouts)}


main = Step(PAPER, "baseline", run, load_baseline, Paths)


if __name__ == "__main__":
    main()
