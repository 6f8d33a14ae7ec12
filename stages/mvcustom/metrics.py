"""The measures at unseen poses: error against the ground truth, reprojection consistency between the generated
views, pose accuracy and pose specificity, identity similarity to the references. Images in [0, 1]."""

from __future__ import annotations

import itertools

import numpy as np

from stages.mvcustom.depth_rendering import reprojection_error
from stages.mvcustom.scene import Camera

HIST_BINS = 4  # per colour channel: 64 colour bins


def gt_mse(generated: np.ndarray, truth: np.ndarray) -> float:
    """Mean squared error against the ground-truth renders, over views, channels and pixels."""
    return float(((generated - truth) ** 2).mean())


def reprojection_consistency(views: np.ndarray, depths: np.ndarray, cams: list[Camera]) -> float:
    """Mean over ordered pairs (i, j), i ≠ j, of |view i sampled at view j's surface points − view j| over the
    surface both poses see, with the TRUE depths of the poses (the geometry the views should share); lower is
    more consistent."""
    errors = [reprojection_error(views[i], depths[i], cams[i], views[j], depths[j], cams[j])[0]
              for i, j in itertools.permutations(range(len(cams)), 2)]
    errors = [e for e in errors if np.isfinite(e)]
    return float(np.mean(errors)) if errors else float("nan")


def pose_accuracy(views: np.ndarray, grid: np.ndarray, target_index: list[int]) -> float:
    """Fraction of generated views whose nearest ground-truth render on the pose grid (MSE) is their target pose."""
    dist = ((views[:, None] - grid[None]) ** 2).reshape(len(views), len(grid), -1).mean(-1)
    return float((dist.argmin(1) == np.asarray(target_index)).mean())


def pose_specificity(views: np.ndarray, truths: np.ndarray) -> float:
    """Error of each view against its own target's true render over its mean error against the other targets'
    true renders (same subject): 0 for the true renders, exactly 1 for any pose-blind output (the same image at
    every pose), below 1 when the views follow their poses; the ground and subject shared by all targets cancel."""
    own = float(((views - truths) ** 2).mean())
    others = float(np.mean([((views - np.roll(truths, k, axis=0)) ** 2).mean() for k in range(1, len(truths))]))
    return own / others if others > 0 else float("nan")


def colour_histogram(images: np.ndarray) -> np.ndarray:
    """Normalised joint RGB histogram (HIST_BINS³ bins) of all pixels of images (…, 3, s, s) in [0, 1]."""
    q = np.clip((np.moveaxis(images, -3, -1).reshape(-1, 3) * HIST_BINS).astype(int), 0, HIST_BINS - 1)
    h = np.bincount(q[:, 0] * HIST_BINS ** 2 + q[:, 1] * HIST_BINS + q[:, 2], minlength=HIST_BINS ** 3)
    return h / h.sum()


def identity_similarity(views: np.ndarray, refs: np.ndarray) -> float:
    """Mean over views of the histogram intersection Σ_b min(h_view(b), h_refs(b)) with the references' pooled
    colour histogram (1 = the same colour distribution)."""
    h_ref = colour_histogram(refs)
    return float(np.mean([np.minimum(colour_histogram(v), h_ref).sum() for v in views]))
