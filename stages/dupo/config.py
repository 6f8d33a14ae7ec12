"""Typed params of ``dupo`` (params/dupo.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, PrivateAttr, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule
from stages.dupo.problems import mask_domain

PAPER = "dupo"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "dual_minus_majority_at_8",
    "dual_minus_reachable_at_8",
    "dupo_accuracy",
    "dupo_gain_minus_fraction_of_oracle_gain",
    "dupo_minus_nofilter",
    "dupo_minus_random",
    "dupo_minus_sft",
    "dupo_nofilter_accuracy",
    "dupo_nofilter_minus_sft",
    "oracle_accuracy",
    "oracle_minus_sft",
    "random_accuracy",
    "random_minus_sft",
    "sft_dual_accuracy",
    "sft_primal_accuracy_high",
    "sft_primal_accuracy_low",
)
Method = Literal["oracle", "dupo", "dupo_nofilter", "random"]


class DataConfig(Section):
    """The problem generator and the sizes of the four disjoint splits."""

    n_sft: int = Field(ge=1)
    n_rl: int = Field(ge=1)
    n_val: int = Field(ge=1)
    n_test: int = Field(ge=1)
    min_ops: int = Field(ge=1, le=6)
    max_ops: int = Field(ge=1, le=6)
    max_number: int = Field(ge=2, le=99)
    max_factor: int = Field(ge=2, le=9)
    max_divisor: int = Field(ge=2, le=9)
    p_final_box: float = Field(ge=0, le=1)   # share of chains ending in a floor division or remainder
    min_filter_fail_share: float = Field(ge=0, lt=1)   # the generator must make the filter matter

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.min_ops > self.max_ops:
            raise ValueError("min_ops must not exceed max_ops")
        return self


class Domains(BaseModel):
    """The values a hidden number of each operation can take: the generator's bounds (``dupo.data``)."""

    model_config = ConfigDict(frozen=True)
    max_number: int
    max_factor: int
    max_divisor: int

    def __call__(self, op: str) -> tuple[int, int]:
        return mask_domain(op, self.max_number, self.max_factor, self.max_divisor)


def domains_of(data: DataConfig) -> Domains:
    """The hidden-number domains the label-free filter solves over (set by the generator, not by labels)."""
    return Domains(max_number=data.max_number, max_factor=data.max_factor, max_divisor=data.max_divisor)


class ModelConfig(Section):
    """The causal transformer (core TinyGPT on a character vocabulary)."""

    d_model: int = Field(ge=8)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    max_len: int = Field(ge=16)
    max_params: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        return self


class SFTConfig(Section):
    """Supervised training on both formats; the checkpoint is chosen on validation accuracy."""

    model: ModelConfig
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    eval_every: int = Field(ge=1)
    n_val_eval: int = Field(ge=1)
    target_primal: tuple[float, float]
    min_dual: float = Field(ge=0, le=1)
    max_new: int = Field(ge=1)
    max_threads: MaxThreads
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> SFTConfig:
        low, high = self.target_primal
        if not 0 <= low <= high <= 1:
            raise ValueError("target_primal must be (low, high) with 0 <= low <= high <= 1")
        return self


class RLConfig(Section):
    """GRPO with equal budgets for every reward; only the reward differs between methods."""

    methods: list[Method] = Field(min_length=1)
    n_seeds: int = Field(ge=1)
    steps: int = Field(ge=1)
    prompts_per_step: int = Field(ge=1)
    group_size: int = Field(ge=2)
    inner_updates: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    clip_eps: float = Field(gt=0, lt=1)
    beta: float = Field(ge=0)
    kl: Literal["k1", "k2", "k3"]
    temperature: float = Field(gt=0)
    max_new: int = Field(ge=1)
    dual_solver: Literal["frozen_sft", "policy"]
    grad_clip: float = Field(gt=0)
    max_threads: MaxThreads
    _domains: Domains | None = PrivateAttr(default=None)

    @property
    def domains(self) -> Domains:
        """The hidden-number domains, from ``dupo.data`` (set by :func:`load_rl`)."""
        if self._domains is None:
            raise ConfigError(f"{PAPER}.rl: loaded without the data section's domains (use load_rl)")
        return self._domains

    @model_validator(mode="after")
    def _check(self) -> RLConfig:
        if len(set(self.methods)) != len(self.methods):
            raise ValueError("methods must be unique")
        return self


class EvaluateConfig(Section):
    """Held-out greedy accuracy of every model; best-of-N reranking of SFT samples."""

    rerank_ns: list[int] = Field(min_length=1)
    n_rerank: int = Field(ge=1)
    temperature: float = Field(gt=0)
    max_new: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    max_threads: MaxThreads
    _domains: Domains | None = PrivateAttr(default=None)

    @property
    def domains(self) -> Domains:
        """The hidden-number domains, from ``dupo.data`` (set by :func:`load_evaluate`)."""
        if self._domains is None:
            raise ConfigError(f"{PAPER}.evaluate: loaded without the data section's domains (use load_evaluate)")
        return self._domains

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if sorted(set(self.rerank_ns)) != self.rerank_ns or self.rerank_ns[0] < 1:
            raise ValueError("rerank_ns must be increasing positive integers")
        if 8 not in self.rerank_ns:
            raise ValueError("rerank_ns must include 8 (the verdict compares reranking with majority vote at N = 8)")
        return self


class ReportConfig(Section):
    """Gates (checks that must hold before the claim checks count) and the oracle-gain fraction."""

    gates: list[str] = Field(min_length=1)
    oracle_fraction: float = Field(gt=0, le=1)


class ReportInputs(Section):
    """The report step reads the verdict rule, its gates, and the settings its prose states."""

    verdict: VerdictRule
    report: ReportConfig
    data: DataConfig
    sft: SFTConfig
    rl: RLConfig
    evaluate: EvaluateConfig


def load_data(params: Path) -> DataConfig:
    """``dupo.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_sft(params: Path) -> SFTConfig:
    """``dupo.sft``."""
    return load_section(SFTConfig, f"{PAPER}.sft", params)


def load_rl(params: Path) -> RLConfig:
    """``dupo.rl``, with the hidden-number domains of ``dupo.data`` (the label-free filter solves over them)."""
    cfg = load_section(RLConfig, f"{PAPER}.rl", params)
    cfg._domains = domains_of(load_data(params))
    return cfg


def load_evaluate(params: Path) -> EvaluateConfig:
    """``dupo.evaluate``, with the hidden-number domains of ``dupo.data``."""
    cfg = load_section(EvaluateConfig, f"{PAPER}.evaluate", params)
    cfg._domains = domains_of(load_data(params))
    return cfg


def load_report(params: Path) -> ReportInputs:
    """``dupo.verdict``, ``dupo.report`` and the data, sft, rl and evaluate settings the report states."""
    rule = load_section(VerdictRule, f"{PAPER}.verdict", params)
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    unknown = set(report.gates) - {c.metric for c in rule.checks}
    if unknown:
        raise ConfigError(f"{PAPER}.report.gates names metrics the verdict block does not check: {sorted(unknown)}")
    return ReportInputs(verdict=rule, report=report, data=load_data(params), sft=load_sft(params),
                        rl=load_rl(params), evaluate=load_evaluate(params))
