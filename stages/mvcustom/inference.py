"""Sampling with depth-aware feature rendering (DFR) and consistency-aware latent completion (LCC), paper Sec. 3.3.

DDIM (η = 0) over the target views, the clean reference views joined in every call. In the first
``window`` sampling steps:
- DFR replaces the predicted clean image x̂_0 of each target view, where the anchor's rendering is
  visible, by the anchor rendered to that pose with its depth; the DDIM step then follows the new x̂_0.
- LCC re-noises x̂_0 to the next noise level with fresh noise where the rendering is NOT visible
  (disoccluded or out of frame), x_{t-1} = √ᾱ_{t-1} x̂_0 + √(1 − ᾱ_{t-1}) z, instead of the deterministic
  DDIM step, so the model completes those regions from its own prediction at every step.
The miniature's latents are the 16 x 16 pixels themselves (no autoencoder).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import torch

from stages.mvcustom.diffusion import MultiViewDenoiser, Rig, clean_estimate
from stages.mvcustom.scene import Camera

ARMS = ("plain", "dfr", "lcc", "dfr_lcc")


@dataclass(frozen=True)
class Guidance:
    """Per target view: the anchor rendered to its pose (v, 3, s, s) in [-1, 1] and where it is visible (v, s, s)."""

    rendered: torch.Tensor
    visible: torch.Tensor


def ddim_timesteps(n_train_steps: int, n_sampling_steps: int) -> list[int]:
    """Evenly spaced training-step indices from T − 1 down to 0 (DDIM's sub-sequence τ)."""
    return [round(float(x)) for x in np.linspace(n_train_steps - 1, 0, n_sampling_steps)]


def depth_aware_feature_rendering(x0: torch.Tensor, guidance: Guidance) -> torch.Tensor:
    """DFR: x̂_0 ← M ⊙ render(anchor) + (1 − M) ⊙ x̂_0 with M the visibility of the anchor at the target pose."""
    return torch.where(guidance.visible[:, None], guidance.rendered, x0)


def consistency_aware_latent_completion(x_next: torch.Tensor, x0: torch.Tensor, ab_next: float, fresh: torch.Tensor,
                                        guidance: Guidance) -> torch.Tensor:
    """LCC: outside M, x_{t-1} ← √ᾱ_{t-1} x̂_0 + √(1 − ᾱ_{t-1}) z with fresh noise z; inside M the DDIM step is kept."""
    renoised = ab_next ** 0.5 * x0 + (1 - ab_next) ** 0.5 * fresh
    return torch.where(guidance.visible[:, None], x_next, renoised)


@torch.no_grad()
def sample(model: MultiViewDenoiser, refs: torch.Tensor, ref_pose: torch.Tensor, target_pose: torch.Tensor,
           noise: torch.Tensor, fresh: torch.Tensor, alpha_bar: torch.Tensor, n_sampling_steps: int,
           guidance: Guidance | None, dfr: bool, lcc: bool, window: int, rig: Rig) -> torch.Tensor:
    """Target views (n, v, 3, s, s) in [-1, 1] from initial noise (n, v, 3, s, s) and fresh noise (steps, n, v, ...).

    ``refs`` (r, 3, s, s) in [-1, 1] with poses (r, 2) in degrees; target poses (v, 2) (conditioned through
    ``rig``; the first reference is view 0). DFR / LCC act in the first ``window`` steps and need ``guidance``.
    """
    if (dfr or lcc) and guidance is None:
        raise ValueError("DFR and LCC need the anchor's rendering and visibility (guidance)")
    n, v = noise.shape[:2]
    r = refs.shape[0]
    taus = ddim_timesteps(len(alpha_bar), n_sampling_steps)
    code, rays = rig.condition(torch.cat([ref_pose, target_pose]))
    pose, rays = code[None].expand(n, -1, -1), rays[None].expand(n, -1, -1, -1, -1)
    is_ref = torch.cat([torch.ones(r, dtype=torch.bool), torch.zeros(v, dtype=torch.bool)])[None].expand(n, -1)
    x = noise.clone()
    for k, step in enumerate(taus):
        ab = alpha_bar[step]
        ab_next = float(alpha_bar[taus[k + 1]]) if k + 1 < len(taus) else 1.0
        t = torch.cat([torch.zeros(r), torch.full((v,), (step + 1) / len(alpha_bar))])[None].expand(n, -1)
        out = model(torch.cat([refs[None].expand(n, -1, -1, -1, -1), x], 1), t, pose, is_ref, rays)[:, r:]
        x0 = clean_estimate(out, x, ab, model.prediction).clamp(-1, 1)
        early = k < window
        if dfr and early:
            x0 = depth_aware_feature_rendering(x0, guidance)
        eps = (x - ab.sqrt() * x0) / (1 - ab).sqrt()
        x_next = ab_next ** 0.5 * x0 + (1 - ab_next) ** 0.5 * eps
        if lcc and early and k + 1 < len(taus):
            x_next = consistency_aware_latent_completion(x_next, x0, ab_next, fresh[k], guidance)
        x = x_next
    return x.clamp(-1, 1)


def nearest_reference(target: Camera, refs: list[Camera]) -> int:
    """Index of the reference camera closest in viewing direction to the target (the anchor)."""
    def direction(c: Camera) -> np.ndarray:
        return c.frame()[3]

    return int(np.argmax([direction(c) @ direction(target) for c in refs]))
