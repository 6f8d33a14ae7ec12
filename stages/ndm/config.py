"""Typed params of ``ndm`` (params/ndm.yaml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.verdict import VerdictRule

PAPER = "ndm"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "lm_full_patch_fraction",
    "lm_gini_margin",
    "lm_gini_ndm",
    "lm_kept_min",
    "toy_ari_margin",
    "toy_ari_ndm",
    "toy_oracle_ari",
)
METHODS = ("ndm", "identity", "random", "pca")
BASELINES = ("identity", "random", "pca")
TASKS = ("ioi", "greater_than")


class NDMConfig(Section):
    """One NDM fit: initial subspace size, restarts, optimiser, KSG merge rule."""

    init_block: int = Field(ge=1)
    restarts: int = Field(ge=1)
    steps: int = Field(ge=1)
    finetune_steps: int = Field(ge=0)
    rounds: int = Field(ge=0, description="merge rounds (each followed by fine-tuning)")
    lr: float = Field(gt=0.0, le=1.0)
    batch_size: int = Field(ge=4)
    merge_threshold: float = Field(ge=0.0, description="merge when KSG MI per dimension (nats) exceeds this")
    ksg_k: int = Field(ge=1)
    mi_points: int = Field(ge=16)
    max_block: int = Field(ge=1, description="no merge may create a subspace larger than this")

    @model_validator(mode="after")
    def _check(self) -> NDMConfig:
        if self.max_block < self.init_block:
            raise ValueError("max_block must be at least init_block")
        if self.mi_points <= self.ksg_k:
            raise ValueError("mi_points must exceed ksg_k")
        return self


class ToyConfig(Section):
    """Sparse grouped features, the tied ReLU autoencoder, and NDM on its hidden space."""

    n_seeds: int = Field(ge=1)
    n_groups: int = Field(ge=2)
    group_size: int = Field(ge=2)
    hidden: int = Field(ge=2)
    p_active: float = Field(gt=0.0, lt=1.0)
    ae_steps: int = Field(ge=1)
    ae_batch_size: int = Field(ge=1)
    ae_lr: float = Field(gt=0.0, le=1.0)
    n_points: int = Field(ge=32)
    noise: float = Field(ge=0.0, description="isotropic Gaussian noise added to the hidden activations")
    ndm: NDMConfig
    max_threads: MaxThreads = 1

    @model_validator(mode="after")
    def _check(self) -> ToyConfig:
        if self.hidden % self.ndm.init_block:
            raise ValueError("hidden must be a multiple of ndm.init_block")
        if self.ndm.batch_size > self.n_points or self.ndm.mi_points > self.n_points:
            raise ValueError("ndm.batch_size and ndm.mi_points must not exceed n_points")
        return self


class PromptsConfig(Section):
    """How many prompts per task for fitting NDM and for patching (disjoint)."""

    n_fit: int = Field(ge=4)
    n_patch: int = Field(ge=2)


class ActivationsConfig(Section):
    """The site: residual stream entering block ``layer`` (hidden_states[layer]) at the last position."""

    layer: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    max_threads: MaxThreads = 1


class FitConfig(Section):
    """NDM on the LM activations, one fit per seed."""

    n_seeds: int = Field(ge=1)
    ndm: NDMConfig
    max_threads: MaxThreads = 1


class PatchConfig(Section):
    """Patching: the competence gate keeps prompts with a positive clean logit difference."""

    max_threads: MaxThreads = 1


class ReportConfig(Section):
    """Positive controls: which verdict checks are gates, and which claim each gate protects."""

    gates: dict[str, list[str]] = Field(description="claim metric -> the gate metrics it needs")


def load_toy(params: Path) -> ToyConfig:
    """``ndm.toy``."""
    return load_section(ToyConfig, f"{PAPER}.toy", params)


def load_prompts(params: Path) -> PromptsConfig:
    """``ndm.prompts``."""
    return load_section(PromptsConfig, f"{PAPER}.prompts", params)


def load_activations(params: Path) -> ActivationsConfig:
    """``ndm.activations``."""
    return load_section(ActivationsConfig, f"{PAPER}.activations", params)


def load_fit(params: Path) -> FitConfig:
    """``ndm.fit``."""
    return load_section(FitConfig, f"{PAPER}.fit", params)


def load_patch(params: Path) -> PatchConfig:
    """``ndm.patch``."""
    return load_section(PatchConfig, f"{PAPER}.patch", params)


class ReportInputs(Section):
    """The report reads its own section, the verdict rule, and the sizes it states."""

    report: ReportConfig
    verdict: VerdictRule
    toy: ToyConfig
    activations: ActivationsConfig
    fit: FitConfig

    @model_validator(mode="after")
    def _gates_name_checked_metrics(self) -> ReportInputs:
        metrics = {c.metric for c in self.verdict.checks}
        named = set(self.report.gates) | {g for needed in self.report.gates.values() for g in needed}
        if named - metrics:
            raise ValueError(f"ndm.report.gates names metrics no check of ndm.verdict reads: {sorted(named - metrics)}")
        return self


def load_report(params: Path) -> ReportInputs:
    """``ndm.report``, ``ndm.verdict`` and the sections whose sizes the report states."""
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    toy, activations, fit = load_toy(params), load_activations(params), load_fit(params)
    try:  # only the cross-section check below is wrapped: each section's own errors already name their key
        return ReportInputs(report=report, verdict=verdict, toy=toy, activations=activations, fit=fit)
    except ValueError as err:
        raise ConfigError(f"{PAPER}.report: {err}") from None
