"""Step ``pretrain``: the multi-view denoiser trained on the random pre-training scenes (Lightning)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.mvcustom.config import PAPER, PretrainInputs, load_pretrain
from stages.mvcustom.diffusion import Rig, cosine_alpha_bar
from stages.mvcustom.expectations import train_log_suite
from stages.mvcustom.io import poses, read_renders
from stages.mvcustom.training import fit, new_denoiser, save_denoiser

MAX_REFS = 3


@dataclass(frozen=True)
class Paths:
    views: Path = inp("view table")
    renders: Path = inp("images and depths of every view")
    model: Path = out("the pre-trained denoiser and its noise schedule (safetensors)")
    train_log: Path = out("pre-training loss per logged step (Parquet)")


def run(cfg: PretrainInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Stack the pre-training scenes' views, train the denoiser, write it and its loss log."""
    p = cfg.pretrain
    cap_threads(p.max_threads)
    views, tensors = read_renders(paths.views, paths.renders, cfg.image_size)
    pre = views[views.split == "pretrain"].sort_values(["scene", "view"])
    n_scenes, n_views = pre.scene.nunique(), int(pre.groupby("scene").size().min())
    if n_scenes * n_views != len(pre):
        raise ValueError(f"{paths.views}: every pre-training scene must have the same number of views")
    images = (tensors["images"][pre.row.to_numpy()] * 2 - 1).reshape(n_scenes, n_views, 3, cfg.image_size,
                                                                     cfg.image_size)
    pose = torch.as_tensor(poses(pre)).reshape(n_scenes, n_views, 2)
    seed = derive_seed(ctx.seed, PAPER, "pretrain")
    model = new_denoiser(cfg.image_size, p.channels, p.heads, seed, p.conditioning == "rays", p.prediction,
                         p.ray_blocks)
    alpha_bar = cosine_alpha_bar(p.diffusion_steps)
    rig = Rig(cfg.radius, cfg.focal, cfg.image_size, p.relative_pose)
    log = fit(model, images, pose, alpha_bar, p.batch_size, p.lr, MAX_REFS, p.trainer, seed, rig, p.ema_decay,
              p.lr_floor, p.pose_swap_weight, p.pose_swap_margin)
    table = pd.DataFrame(log)
    validate_table(table, f"{PAPER}.train_log", train_log_suite(len(table)))
    write_parquet(table, paths.train_log)
    save_denoiser(model, alpha_bar, paths.model)
    return {"final_loss": round(log[-1]["loss"], 5), "n_scenes": n_scenes,
            "parameters": sum(x.numel() for x in model.parameters())}


main = Step(PAPER, "pretrain", run, load_pretrain, Paths)


if __name__ == "__main__":
    main()
