"""Typed params of ``text2grad`` (params/text2grad.yaml)."""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule
from stages.text2grad.alignment import SCHEMES, RewardScheme
from stages.text2grad.task import NAMES

PAPER = "text2grad"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "rouge_oracle_token_minus_oracle_terminal",
    "rouge_oracle_token_minus_start",
    "rouge_text2grad_minus_dense",
    "rouge_text2grad_minus_no_critique",
    "rouge_text2grad_minus_scalar",
    "rouge_text2grad_minus_start",
)


class NoiseConfig(Section):
    """Error rates of a noisy summariser."""

    p_drop_fact: float = Field(ge=0, le=1)
    p_keep_distractor: float = Field(ge=0, le=1)
    p_alter: float = Field(ge=0, le=1)
    p_repeat: float = Field(ge=0, le=1)


class DataConfig(Section):
    """Source sizes, split sizes, the two noise levels and the tokenizer's vocabulary size."""

    n_facts: int = Field(ge=1, le=4)
    n_distractors: int = Field(ge=0, le=4)
    n_sft: int = Field(ge=8)
    n_rm_train: int = Field(ge=8)
    n_rm_test: int = Field(ge=4)
    n_ppo: int = Field(ge=4)
    n_test: int = Field(ge=4)
    sft_noise: NoiseConfig
    rm_noise: NoiseConfig
    vocab_size: int = Field(ge=270, le=4096)

    @model_validator(mode="after")
    def _check(self) -> DataConfig:
        if self.n_facts + self.n_distractors > len(NAMES):
            raise ValueError(f"n_facts + n_distractors must be at most {len(NAMES)} (distinct subjects)")
        return self


class ModelSpec(Section):
    """A TinyGPT trained from scratch on the small vocabulary."""

    d_model: int = Field(ge=8)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    max_len: int = Field(ge=16)

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        return self


class RewardModelConfig(Section):
    """The generative reward models (with and without the critique), one pair per RL seed, and their evaluation."""

    n_seeds: int = Field(ge=1)
    max_threads: MaxThreads  # a 64-wide transformer: a second thread adds more synchronisation than speed
    model: ModelSpec
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    max_critique: int = Field(ge=4)
    trainer: TrainerConfig


class SftConfig(Section):
    """Supervised warm start of the policy on noisy summaries (also the KL reference)."""

    max_threads: MaxThreads
    model: ModelSpec
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    trainer: TrainerConfig


class PpoConfig(Section):
    """PPO with a value head and token-level GAE, for each reward scheme and seed."""

    schemes: list[RewardScheme] = Field(min_length=1)
    max_threads: MaxThreads
    n_seeds: int = Field(ge=1)
    steps: int = Field(ge=1)
    rollouts: int = Field(ge=2)
    minibatch: int = Field(ge=1)
    epochs: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    clip_eps: float = Field(gt=0, lt=1)
    value_clip: float = Field(gt=0)
    vf_coef: float = Field(ge=0)
    gamma: float = Field(gt=0, le=1)
    lam: float = Field(ge=0, le=1)
    beta: float = Field(ge=0)
    omission_penalty: float = Field(ge=0)
    max_grad_norm: float = Field(gt=0)
    max_new_tokens: int = Field(ge=2)
    temperature: float = Field(gt=0)
    max_critique: int = Field(ge=4)
    eval_every: int = Field(ge=1)
    n_eval: int = Field(ge=2)
    eval_samples: int = Field(ge=1)
    target_rouge: float = Field(gt=0, le=1)

    @model_validator(mode="after")
    def _check(self) -> PpoConfig:
        if len(set(self.schemes)) != len(self.schemes) or not set(self.schemes) <= set(SCHEMES):
            raise ValueError(f"schemes must be distinct members of {list(SCHEMES)}")
        if self.minibatch > self.rollouts:
            raise ValueError("minibatch must not exceed rollouts")
        return self


class ReportInputs(Section):
    """The report step reads the verdict rule, its gates (positive controls) and the PPO target."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)
    target_rouge: float
    omission_penalty: float
    ref_words: int


def load_data(params: Path) -> DataConfig:
    """``text2grad.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_reward_model(params: Path) -> RewardModelConfig:
    """``text2grad.reward_model``."""
    return load_section(RewardModelConfig, f"{PAPER}.reward_model", params)


def load_sft(params: Path) -> SftConfig:
    """``text2grad.sft``."""
    return load_section(SftConfig, f"{PAPER}.sft", params)


def load_ppo(params: Path) -> PpoConfig:
    """``text2grad.ppo``."""
    return load_section(PpoConfig, f"{PAPER}.ppo", params)


def load_report(params: Path) -> ReportInputs:
    """``text2grad.verdict``, ``.report.gates``, ``.ppo`` (target, omission penalty), ``.data.n_facts``."""
    verdict, gates = load_gated_rule(PAPER, params)
    ppo = load_section(PpoConfig, f"{PAPER}.ppo", params)
    n_facts = load_section(DataConfig, f"{PAPER}.data", params).n_facts
    return ReportInputs(verdict=verdict, gates=gates, target_rouge=ppo.target_rouge,
                        omission_penalty=ppo.omission_penalty, ref_words=5 * n_facts)
