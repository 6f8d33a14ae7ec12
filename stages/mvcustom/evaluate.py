"""Step ``evaluate``: per held-out subject, fine-tune the pre-trained denoiser on its reference views, then
generate its unseen target poses with every arm on the same noise and measure them.

Arms: ``plain``, ``dfr`` (depth-aware feature rendering), ``lcc`` (consistency-aware latent completion),
``dfr_lcc`` (both), ``warp_only`` (the anchor rendered to the pose, holes filled with the anchor's mean
colour: the floor), ``pose_blind`` (the mean of the references at every target pose: a trivial output that
ignores the pose), and two references for the metrics: ``ground_truth`` (the true renders) and
``shuffled_truth`` (the true renders assigned to the wrong target poses). The window of DFR/LCC (a
fraction of the sampling steps) is chosen on the validation subjects by the error against their
ground truth; the test subjects (one per seed) are generated with it only.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import NonFiniteError, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.mvcustom.config import PAPER, EvaluateInputs, load_evaluate
from stages.mvcustom.depth_rendering import render_to_pose
from stages.mvcustom.diffusion import MultiViewDenoiser, Rig
from stages.mvcustom.expectations import results_suite
from stages.mvcustom.inference import ARMS, Guidance, nearest_reference, sample
from stages.mvcustom.io import camera, poses, read_renders
from stages.mvcustom.metrics import (
    gt_mse,
    identity_similarity,
    pose_accuracy,
    pose_specificity,
    reprojection_consistency,
)
from stages.mvcustom.training import fit, load_denoiser

FINETUNE_MAX_REFS = 2
REFERENCE_ARMS = ("warp_only", "pose_blind", "ground_truth", "shuffled_truth")
ALL_ARMS = [*ARMS, *REFERENCE_ARMS]


@dataclass(frozen=True)
class Paths:
    views: Path = inp("view table")
    renders: Path = inp("images and depths of every view")
    model: Path = inp("the pre-trained denoiser")
    results: Path = out("per split, subject, window and arm: gt_mse, reproj_error, pose_accuracy, "
                        "pose_specificity, identity (Parquet)")
    evaluation: Path = out("the chosen window, the validation grid, fine-tuning losses (JSON)")
    samples: Path = out("first sample of every arm for every test subject, with truths and references (safetensors)")


@dataclass
class Subject:
    """One held-out subject: references and targets (images in [0, 1], depths, cameras), its pose-grid renders."""

    refs: np.ndarray
    ref_depth: np.ndarray
    ref_cams: list
    ref_pose: np.ndarray
    targets: np.ndarray
    target_depth: np.ndarray
    target_cams: list
    target_pose: np.ndarray
    grid: np.ndarray
    target_in_grid: list[int]


def subject(views: pd.DataFrame, tensors: dict[str, torch.Tensor], split: str, index: int, cfg: EvaluateInputs) \
        -> Subject:
    """Gather one subject's views from the table."""
    rows = views[(views.split == split) & (views.scene == index)]
    part = {role: rows[rows.role == role].sort_values("view") for role in ("ref", "target", "grid")}
    img, dep = tensors["images"].numpy(), tensors["depth"].numpy()
    grid_poses = [tuple(p) for p in poses(part["grid"]).tolist()]
    missing = [tuple(p) for p in poses(part["target"]).tolist() if tuple(p) not in grid_poses]
    if missing or len(part["ref"]) == 0 or len(part["target"]) < 2:
        raise ValueError(f"{split} subject {index}: needs references, >= 2 targets and every target on the pose grid")
    return Subject(
        refs=img[part["ref"].row.to_numpy()], ref_depth=dep[part["ref"].row.to_numpy()],
        ref_cams=[camera(r, cfg.data) for _, r in part["ref"].iterrows()], ref_pose=poses(part["ref"]),
        targets=img[part["target"].row.to_numpy()], target_depth=dep[part["target"].row.to_numpy()],
        target_cams=[camera(r, cfg.data) for _, r in part["target"].iterrows()], target_pose=poses(part["target"]),
        grid=img[part["grid"].row.to_numpy()],
        target_in_grid=[grid_poses.index(tuple(p)) for p in poses(part["target"]).tolist()])


def anchor_guidance(sub: Subject, supersample: int) -> tuple[Guidance, np.ndarray]:
    """Each target's nearest reference rendered to its pose with the reference's depth: (guidance in [-1, 1],
    the warp-only floor in [0, 1] with holes filled by the anchor's mean colour)."""
    rendered, visible, floor = [], [], []
    for cam in sub.target_cams:
        a = nearest_reference(cam, sub.ref_cams)
        img, vis, _ = render_to_pose(sub.refs[a], sub.ref_depth[a], sub.ref_cams[a], cam, supersample)
        rendered.append(img * 2 - 1)
        visible.append(vis)
        floor.append(np.where(vis[None], img, sub.refs[a].reshape(3, -1).mean(1)[:, None, None]))
    return (Guidance(torch.as_tensor(np.stack(rendered), dtype=torch.float32), torch.as_tensor(np.stack(visible))),
            np.stack(floor))


def measure(generated: np.ndarray, sub: Subject) -> dict[str, float]:
    """The measures of generated views (n_samples, v, 3, s, s) in [0, 1], means over samples."""
    return {"gt_mse": float(np.mean([gt_mse(g, sub.targets) for g in generated])),
            "reproj_error": float(np.mean([reprojection_consistency(g, sub.target_depth, sub.target_cams)
                                           for g in generated])),
            "pose_accuracy": float(np.mean([pose_accuracy(g, sub.grid, sub.target_in_grid) for g in generated])),
            "pose_specificity": float(np.mean([pose_specificity(g, sub.targets) for g in generated])),
            "identity": float(np.mean([identity_similarity(g, sub.refs) for g in generated]))}


def rig(cfg: EvaluateInputs) -> Rig:
    """The cameras and pose frame the denoiser was pre-trained with."""
    return Rig(cfg.data.radius, cfg.data.focal, cfg.data.image_size, cfg.pretrain.relative_pose)


def customise(pretrained: MultiViewDenoiser, alpha_bar: torch.Tensor, sub: Subject, cfg: EvaluateInputs,
              seed: int) -> tuple[MultiViewDenoiser, list[dict[str, float]]]:
    """A copy of the pre-trained denoiser fine-tuned on the subject's reference views only."""
    model = copy.deepcopy(pretrained).train()
    images = torch.as_tensor(sub.refs[None] * 2 - 1, dtype=torch.float32)
    pose = torch.as_tensor(sub.ref_pose[None])
    e = cfg.evaluate
    log = fit(model, images, pose, alpha_bar, cfg.pretrain.batch_size, e.finetune_lr,
              min(FINETUNE_MAX_REFS, len(sub.refs) - 1), e.trainer, seed, rig(cfg))
    return model.eval(), log


def generate(model: MultiViewDenoiser, alpha_bar: torch.Tensor, sub: Subject, guidance: Guidance, arm: str,
             window: int, noise: torch.Tensor, fresh: torch.Tensor, steps: int, cameras: Rig) -> np.ndarray:
    """One arm's samples (n, v, 3, s, s) in [0, 1]."""
    refs = torch.as_tensor(sub.refs * 2 - 1, dtype=torch.float32)
    x = sample(model, refs, torch.as_tensor(sub.ref_pose), torch.as_tensor(sub.target_pose), noise, fresh,
               alpha_bar, steps, guidance, dfr=arm in ("dfr", "dfr_lcc"), lcc=arm in ("lcc", "dfr_lcc"),
               window=window, rig=cameras)
    out = ((x + 1) / 2).numpy()
    if not np.isfinite(out).all():
        raise NonFiniteError(f"{PAPER}: arm {arm} produced non-finite images (non-finite weights?)")
    return out


def evaluate_subject(model: MultiViewDenoiser, alpha_bar: torch.Tensor, sub: Subject, cfg: EvaluateInputs,
                     windows: list[float], seed: int) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    """Rows of measures per (window, arm) and the first sample of each arm (window-free arms at window 0)."""
    e = cfg.evaluate
    gen = torch.Generator().manual_seed(seed)
    shape = (e.n_samples, len(sub.target_cams), 3, cfg.data.image_size, cfg.data.image_size)
    noise = torch.randn(shape, generator=gen)
    fresh = torch.randn((e.sampling_steps, *shape), generator=gen)
    guidance, floor = anchor_guidance(sub, e.supersample)
    truth = sub.targets[None]
    shuffled = np.roll(sub.targets, 1, axis=0)[None]
    blind = np.broadcast_to(sub.refs.mean(0), sub.targets.shape)[None].copy()
    firsts: dict[str, np.ndarray] = {}
    rows = []
    for arm, images in (("warp_only", floor[None]), ("pose_blind", blind), ("ground_truth", truth),
                        ("shuffled_truth", shuffled),
                        ("plain", generate(model, alpha_bar, sub, guidance, "plain", 0, noise, fresh,
                                           e.sampling_steps, rig(cfg)))):
        rows.append({"window": 0.0, "arm": arm, **measure(images, sub)})
        firsts[arm] = images[0]
    for w in windows:
        k = max(1, round(w * e.sampling_steps))
        for arm in ("dfr", "lcc", "dfr_lcc"):
            images = generate(model, alpha_bar, sub, guidance, arm, k, noise, fresh, e.sampling_steps, rig(cfg))
            rows.append({"window": w, "arm": arm, **measure(images, sub)})
            firsts[f"{arm}@{w:g}"] = images[0]
    return rows, firsts


def choose_window(val: pd.DataFrame, grid: list[float]) -> float:
    """The window whose DFR + LCC has the lowest mean validation error against the ground truth (first on ties)."""
    both = val[val.arm == "dfr_lcc"].groupby("window").gt_mse.mean()
    return min(grid, key=lambda w: (float(both[w]), grid.index(w)))


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Validation subjects choose the window; each test subject (a seed) is customised and generated by every arm."""
    e = cfg.evaluate
    cap_threads(e.max_threads)
    views, tensors = read_renders(paths.views, paths.renders, cfg.data.image_size)
    pretrained, alpha_bar = load_denoiser(paths.model, cfg.data.image_size, cfg.pretrain.channels,
                                          cfg.pretrain.heads, cfg.pretrain.conditioning == "rays",
                                          cfg.pretrain.prediction, cfg.pretrain.ray_blocks)
    if len(alpha_bar) != cfg.pretrain.diffusion_steps:
        raise ValueError(f"{paths.model}: schedule has {len(alpha_bar)} steps, mvcustom.pretrain.diffusion_steps "
                         f"is {cfg.pretrain.diffusion_steps}")
    rows: list[dict[str, Any]] = []
    record: dict[str, Any] = {"finetune_final_loss": {}, "anchor_visible_fraction": {}}
    saved: dict[str, torch.Tensor] = {}
    jobs = [("val", i) for i in range(cfg.data.n_val_subjects)] + [("test", i) for i in range(cfg.data.n_seeds)]
    window = None
    for split, i in tqdm(jobs, desc="customise and generate", unit="subject"):
        if split == "test" and window is None:
            window = choose_window(pd.DataFrame(rows), list(e.window_grid))
        sub = subject(views, tensors, split, i, cfg)
        model, log = customise(pretrained, alpha_bar, sub, cfg, derive_seed(ctx.seed, PAPER, "finetune", split, i))
        windows = list(e.window_grid) if split == "val" else [window]
        sub_rows, firsts = evaluate_subject(model, alpha_bar, sub, cfg, windows,
                                            derive_seed(ctx.seed, PAPER, "noise", split, i))
        rows += [{"split": split, "subject": i, **r} for r in sub_rows]
        record["finetune_final_loss"][f"{split}/{i}"] = log[-1]["loss"]
        record["anchor_visible_fraction"][f"{split}/{i}"] = float(anchor_guidance(sub, e.supersample)[0]
                                                                  .visible.float().mean())
        if split == "test":
            saved |= {f"test{i}/{k.split('@')[0]}": torch.as_tensor(v, dtype=torch.float32) for k, v in firsts.items()}
            saved[f"test{i}/references"] = torch.as_tensor(sub.refs, dtype=torch.float32)
    results = pd.DataFrame(rows)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), ALL_ARMS))
    record |= {"window": window, "window_steps": max(1, round(window * e.sampling_steps)),
               "window_grid": list(e.window_grid), "sampling_steps": e.sampling_steps, "n_samples": e.n_samples,
               "validation_gt_mse": {f"{w:g}": float(results[(results.split == "val") & (results.arm == "dfr_lcc")
                                                             & (results.window == w)].gt_mse.mean())
                                     for w in e.window_grid},
               "n_seeds": cfg.data.n_seeds, "n_val_subjects": cfg.data.n_val_subjects}
    write_parquet(results, paths.results)
    write_json(record, paths.evaluation, finite=True)
    save_safetensors(saved, paths.samples)
    return {"window": window}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
