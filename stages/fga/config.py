"""Typed params of ``fga`` (params/fga.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Any, Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "fga"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "clean_zero_shot_accuracy",
    "fga_coop_minus_zero",
    "fga_minus_sapt",
    "fga_minus_tpt",
    "fga_minus_zero",
    "fga_text_passes_over_tpt",
    "sharpness_ratio_sapt_over_coop",
    "views_vote_minus_single",
)
Corruption = Literal["blur", "noise", "invert", "pixelate", "occlude", "fog"]


class ClipConfig(Section):
    """The small CLIP: disjoint image counts per role, image size, prompt templates, projector training."""

    image_size: int = Field(ge=32, le=224)
    n_clip_per_class: int = Field(ge=2)
    n_fewshot_pool_per_class: int = Field(ge=1)
    n_val_per_class: int = Field(ge=1)
    n_test_per_class: int = Field(ge=1)
    train_templates: list[str] = Field(min_length=1)
    eval_template: str = Field(min_length=3)
    embed_dim: int = Field(ge=2, le=2048)
    hidden: int = Field(ge=0, le=4096)
    steps: int = Field(ge=1)
    batch_size: int = Field(ge=4)
    lr: float = Field(gt=0, le=1)
    weight_decay: float = Field(ge=0, le=1)
    image_batch_size: int = Field(ge=1, le=1024)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> ClipConfig:
        for t in [*self.train_templates, self.eval_template]:
            if t.count("{}") != 1:
                raise ValueError(f"every template needs exactly one '{{}}' for the class name, got {t!r}")
        if self.eval_template in self.train_templates:
            raise ValueError("eval_template must not be one of the train_templates (zero-shot uses a held-out prompt)")
        return self


class ViewsConfig(Section):
    """Shifts (corruption kind x severity) for test and validation, and the augmented views per image."""

    test_corruptions: list[Corruption] = Field(min_length=1)
    val_corruptions: list[Corruption] = Field(min_length=1)
    severities: list[int] = Field(min_length=1)
    n_views: int = Field(ge=2, le=64)
    crop_scale: list[float] = Field(min_length=2, max_length=2)
    max_shift: int = Field(ge=0, le=8)
    flip: bool
    image_batch_size: int = Field(ge=1, le=1024)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> ViewsConfig:
        if set(self.test_corruptions) & set(self.val_corruptions):
            raise ValueError("val_corruptions must be other kinds than test_corruptions (knobs are tuned on "
                             "shifts never tested)")
        if len(set(self.test_corruptions)) != len(self.test_corruptions):
            raise ValueError("test_corruptions must be unique")
        if any(s not in (1, 2, 3) for s in self.severities) or sorted(set(self.severities)) != self.severities:
            raise ValueError(f"severities must be increasing values in 1..3, got {self.severities}")
        lo, hi = self.crop_scale
        if not 0.1 <= lo <= hi <= 1.0:
            raise ValueError(f"crop_scale must be [lo, hi] with 0.1 <= lo <= hi <= 1, got {self.crop_scale}")
        return self


class AdaptConfig(Section):
    """Prompt tuning (CoOp, SAPT), the test-time methods and the validation grids of every tuned knob."""

    n_seeds: int = Field(ge=1)
    shots: int = Field(ge=1)
    prompt_init_std: float = Field(ge=0, le=1)
    steps: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    rho_grid: list[float] = Field(min_length=1)
    keep_grid: list[int] = Field(min_length=1)
    lambda_grid: list[float] = Field(min_length=1)
    tpt_lr_grid: list[float] = Field(min_length=1)
    n_perturbations: int = Field(ge=1, le=64)
    sharpness_ascent_steps: int = Field(ge=1, le=50)
    max_threads: MaxThreads

    @model_validator(mode="after")
    def _check(self) -> AdaptConfig:
        if any(r <= 0 for r in self.rho_grid) or any(k < 1 for k in self.keep_grid):
            raise ValueError("rho_grid must be positive and keep_grid at least 1")
        if any(lam < 0 for lam in self.lambda_grid) or any(lr <= 0 for lr in self.tpt_lr_grid):
            raise ValueError("lambda_grid must be >= 0 and tpt_lr_grid > 0")
        return self


class AdaptInputs(Section):
    """adapt reads its own section and the view count and shift kinds of ``fga.views``."""

    adapt: AdaptConfig
    n_views: int
    test_corruptions: list[str]
    val_corruptions: list[str]
    severities: list[int]
    embed_dim: int
    hidden: int
    views_policy: dict[str, Any]

    @model_validator(mode="after")
    def _check(self) -> AdaptInputs:
        if max(self.adapt.keep_grid) > self.n_views:
            raise ValueError(f"keep_grid ({self.adapt.keep_grid}) must not exceed views.n_views ({self.n_views})")
        return self


class ReportInputs(Section):
    """The report reads the verdict rule and which checks are gates (positive controls)."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)


def load_clip(params: Path) -> ClipConfig:
    """``fga.clip``."""
    return load_section(ClipConfig, f"{PAPER}.clip", params)


class ViewsInputs(Section):
    """views reads its own section and ``fga.clip`` (the splits, the image size, the projector sizes)."""

    views: ViewsConfig
    clip: ClipConfig


def load_views(params: Path) -> ViewsInputs:
    """``fga.views`` and ``fga.clip``."""
    return ViewsInputs(views=load_section(ViewsConfig, f"{PAPER}.views", params),
                       clip=load_section(ClipConfig, f"{PAPER}.clip", params))


def load_adapt(params: Path) -> AdaptInputs:
    """``fga.adapt`` with the view counts of ``fga.views`` and the projector sizes of ``fga.clip``."""
    views = load_section(ViewsConfig, f"{PAPER}.views", params)
    clip = load_section(ClipConfig, f"{PAPER}.clip", params)
    try:
        return AdaptInputs(adapt=load_section(AdaptConfig, f"{PAPER}.adapt", params), n_views=views.n_views,
                           test_corruptions=list(views.test_corruptions),
                           val_corruptions=list(views.val_corruptions), severities=views.severities,
                           embed_dim=clip.embed_dim, hidden=clip.hidden,
                           views_policy={"crop_scale": views.crop_scale, "max_shift": views.max_shift,
                                         "flip": views.flip})
    except ValueError as err:
        raise ConfigError(f"{PAPER}.adapt: {err}") from None


def load_report(params: Path) -> ReportInputs:
    """``fga.verdict`` and ``fga.report.gates``."""
    verdict, gates = load_gated_rule(PAPER, params)
    return ReportInputs(verdict=verdict, gates=gates)
