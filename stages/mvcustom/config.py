"""Typed params of ``mvcustom`` (params/mvcustom.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "mvcustom"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "gt_mse_change_dfr_lcc_over_plain",
    "gt_mse_warp_minus_dfr_lcc",
    "gt_mse_warp_minus_pose_blind",
    "gt_mse_warp_minus_plain",
    "identity_dfr_lcc_minus_plain",
    "pose_accuracy_dfr_lcc",
    "pose_accuracy_plain",
    "pose_specificity_dfr_lcc",
    "pose_specificity_plain",
    "reproj_gain_dfr_lcc_over_plain",
    "reproj_gt_over_shuffled",
)


class DataConfig(Section):
    """The renderer, the random pre-training scenes, and the held-out subjects (validation and test)."""

    image_size: int = Field(ge=8, le=128)
    focal: float = Field(gt=0, le=1000)        # pixels
    radius: float = Field(gt=1.5, le=20)       # camera orbit radius (world units)
    max_objects: int = Field(ge=1, le=6)
    n_pretrain_scenes: int = Field(ge=2)
    views_per_scene: int = Field(ge=2, le=12)
    elevation_range: list[float] = Field(min_length=2, max_length=2)
    azimuth_step: int = Field(ge=10, le=120)   # pose grid: azimuths every step degrees
    grid_elevations: list[float] = Field(min_length=1)
    n_refs: int = Field(ge=1, le=6)
    n_targets: int = Field(ge=2, le=8)
    n_val_subjects: int = Field(ge=1)
    n_seeds: int = Field(ge=1)                 # seed = a held-out test subject, its fine-tuning and sampling noise

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        lo, hi = self.elevation_range
        if not 5 <= lo <= hi <= 80:
            raise ValueError(f"elevation_range must be [lo, hi] with 5 <= lo <= hi <= 80, got {self.elevation_range}")
        if any(not lo <= e <= hi for e in self.grid_elevations):
            raise ValueError(f"grid_elevations {self.grid_elevations} must lie in elevation_range "
                             f"{self.elevation_range}")
        if 360 % self.azimuth_step:
            raise ValueError(f"azimuth_step must divide 360, got {self.azimuth_step}")
        n_grid = 360 // self.azimuth_step * len(self.grid_elevations)
        if self.n_refs + self.n_targets > n_grid:
            raise ValueError(f"n_refs + n_targets ({self.n_refs + self.n_targets}) exceed the {n_grid} grid poses")
        if self.image_size % 2:
            raise ValueError(f"image_size must be even (the denoiser halves it), got {self.image_size}")
        return self


class PretrainConfig(Section):
    """The multi-view denoiser and its pre-training on random scenes."""

    channels: int = Field(ge=4, le=512)
    heads: int = Field(ge=1, le=16)
    conditioning: Literal["global", "rays"]     # pose as one sin/cos vector per view, or + per-pixel Plücker rays
    relative_pose: bool                        # poses relative to the first (reference) view's azimuth
    prediction: Literal["eps", "v"]            # the denoiser predicts the noise ε or the velocity v
    ray_blocks: bool                           # the rays' embedding also added per pixel in every residual block
    pose_swap_weight: float = Field(ge=0, le=10)    # weight of the pose-swap hinge (0 = none), pre-training only
    pose_swap_margin: float = Field(ge=0, le=1)     # its relative margin: L(swapped poses) >= (1 + margin) L(true)
    diffusion_steps: int = Field(ge=10, le=4000)
    batch_size: int = Field(ge=1, le=1024)
    lr: float = Field(gt=0, le=1)
    lr_floor: float = Field(gt=0, le=1)        # the learning rate decays along a cosine to lr_floor x lr
    ema_decay: float = Field(ge=0, lt=1)       # moving average of the weights (0 = none), the model saved
    trainer: TrainerConfig
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> PretrainConfig:
        if (2 * self.channels) % self.heads:
            raise ValueError(f"heads ({self.heads}) must divide 2 x channels ({2 * self.channels})")
        if self.ray_blocks and self.conditioning != "rays":
            raise ValueError("ray_blocks needs conditioning: rays")
        return self


class EvaluateConfig(Section):
    """Fine-tuning on a subject's references (``trainer.max_steps`` steps), sampling, the DFR/LCC window grid."""

    finetune_lr: float = Field(gt=0, le=1)
    sampling_steps: int = Field(ge=2, le=1000)
    n_samples: int = Field(ge=1, le=64)        # noise draws per subject (the same draws for every arm)
    window_grid: list[float] = Field(min_length=1)   # fraction of the sampling steps DFR and LCC act in
    supersample: int = Field(ge=1, le=4)
    trainer: TrainerConfig
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if any(not 0 < w <= 1 for w in self.window_grid):
            raise ValueError(f"window_grid values must be in (0, 1], got {self.window_grid}")
        return self


class EvaluateInputs(Section):
    """evaluate reads its own section, the renderer of ``mvcustom.data`` and the model of ``mvcustom.pretrain``."""

    evaluate: EvaluateConfig
    data: DataConfig
    pretrain: PretrainConfig

    @model_validator(mode="after")
    def _check(self) -> EvaluateInputs:
        if self.evaluate.sampling_steps > self.pretrain.diffusion_steps:
            raise ValueError(f"sampling_steps ({self.evaluate.sampling_steps}) must not exceed "
                             f"mvcustom.pretrain.diffusion_steps ({self.pretrain.diffusion_steps})")
        return self


class PretrainInputs(Section):
    """pretrain reads its own section and the cameras (image size, focal length, orbit radius) of ``mvcustom.data``."""

    pretrain: PretrainConfig
    image_size: int
    focal: float
    radius: float


class ReportInputs(Section):
    """The report reads the verdict rule and which checks are gates (positive controls)."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)


def load_data(params: Path) -> DataConfig:
    """``mvcustom.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_pretrain(params: Path) -> PretrainInputs:
    """``mvcustom.pretrain`` with the cameras of ``mvcustom.data``."""
    data = load_section(DataConfig, f"{PAPER}.data", params)
    return PretrainInputs(pretrain=load_section(PretrainConfig, f"{PAPER}.pretrain", params),
                          image_size=data.image_size, focal=data.focal, radius=data.radius)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``mvcustom.evaluate`` with ``mvcustom.data`` and ``mvcustom.pretrain``."""
    try:
        return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                              data=load_section(DataConfig, f"{PAPER}.data", params),
                              pretrain=load_section(PretrainConfig, f"{PAPER}.pretrain", params))
    except ValueError as err:
        if isinstance(err, ConfigError):
            raise
        raise ConfigError(f"{PAPER}.evaluate: {err}") from None


def load_report(params: Path) -> ReportInputs:
    """``mvcustom.verdict`` and ``mvcustom.report.gates``."""
    verdict, gates = load_gated_rule(PAPER, params)
    return ReportInputs(verdict=verdict, gates=gates)
