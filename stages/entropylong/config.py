"""Typed params of ``entropylong`` (params/entropylong.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "entropylong"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "alone_loss_rise_max",
    "base_content_gain",
    "content_gain_min",
    "gain_entropylong_minus_base",
    "gain_entropylong_minus_concatenation",
    "gain_entropylong_minus_no_verification",
    "gain_no_verification_minus_concatenation",
)
Variant = Literal["entropylong", "no_verification", "concatenation"]


class EntropyConfig(Section):
    """Documents, their per-token entropies under the entropy model, and the selected positions (§3.1)."""

    wiki_docs: int = Field(ge=0)
    enwiki_docs: int = Field(ge=0)
    doc_tokens: int = Field(ge=32)
    min_doc_tokens: int = Field(ge=16)
    heldout_docs: int = Field(ge=1)
    exclude_first: int = Field(ge=0)
    alpha: float = Field(gt=0)
    alphas: list[float] = Field(min_length=1)
    max_positions: int = Field(ge=1)
    min_separation: int = Field(ge=1)
    query_window: int = Field(ge=1)
    batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> EntropyConfig:
        if self.wiki_docs + self.enwiki_docs <= self.heldout_docs:
            raise ValueError("heldout_docs must leave at least one training document (wiki_docs + enwiki_docs)")
        if self.exclude_first >= self.doc_tokens:
            raise ValueError("exclude_first must be shorter than a document (doc_tokens)")
        if self.min_doc_tokens > self.doc_tokens:
            raise ValueError("min_doc_tokens must not exceed doc_tokens")
        if self.alpha not in self.alphas:
            raise ValueError(f"alpha {self.alpha} must be one of the ablation alphas {self.alphas}")
        if 2 * self.query_window >= self.doc_tokens:
            raise ValueError("the query window (2 * query_window) must be shorter than a document")
        return self

    @property
    def selection_alpha(self) -> float:
        """Positions are selected at the smallest α; larger α keep a prefix of them (same rule, higher τ)."""
        return min(self.alphas)


class RetrieveConfig(Section):
    """Dense top-K retrieval per selected position, self-retrievals excluded (§3.2)."""

    top_k: int = Field(ge=1)
    search_k: int = Field(ge=1)
    duplicate_ngram: int = Field(ge=2)
    max_duplicate_overlap: float = Field(gt=0, lt=1)
    encode_batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> RetrieveConfig:
        if self.search_k < self.top_k:
            raise ValueError("search_k must be at least top_k (hits are filtered before the top K are taken)")
        return self


class VerifyConfig(Section):
    """Model-in-the-loop verification: ΔI of each candidate at its position, keep when ΔI > ε (§3.3)."""

    epsilon: float = Field(gt=0, lt=1)
    epsilons: list[float] = Field(min_length=1)
    null_chunks: int = Field(ge=1)
    null_quantile: float = Field(gt=0, le=1)
    max_context_tokens: int = Field(ge=8)
    separator: str = Field(min_length=1)
    batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> VerifyConfig:
        if self.epsilon not in self.epsilons:
            raise ValueError(f"epsilon {self.epsilon} must be one of the ablation epsilons {self.epsilons}")
        if any(not 0 < e < 1 for e in self.epsilons):
            raise ValueError("every ablation epsilon must lie in (0, 1)")
        return self


class ConstructConfig(Section):
    """Training sequences of ``target_len`` small-tokenizer tokens for each variant (§3.4)."""

    target_len: int = Field(ge=32)
    min_context_tokens: int = Field(ge=1)
    max_context_tokens: int = Field(ge=8)
    sequences_per_doc: int = Field(ge=1)
    min_train_docs: int = Field(ge=1)
    val_docs: int = Field(ge=1)
    separator: str = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> ConstructConfig:
        if self.min_context_tokens >= self.target_len - 8:
            raise ValueError("min_context_tokens leaves fewer than 8 tokens for the document")
        return self


class LoraSpec(Section):
    """Low-rank adapters on SmolLM2's attention projections: W x + (α/r)·B A x, B = 0 at the start."""

    rank: int = Field(ge=1, le=256)
    alpha: float = Field(gt=0)
    targets: list[Literal["q_proj", "k_proj", "v_proj", "o_proj"]] = Field(min_length=1)


class TrainConfig(Section):
    """The same model trained on each variant, ``n_seeds`` times, at every learning rate of ``lrs`` (Lightning);
    evaluate keeps the one with the lowest validation loss."""

    variants: list[Variant] = Field(min_length=1)
    lora: LoraSpec
    n_seeds: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lrs: list[float] = Field(min_length=1)
    warmup_steps: int = Field(ge=0)
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be unique, got {self.variants}")
        if any(not 0 < lr <= 1 for lr in self.lrs) or len(set(self.lrs)) != len(self.lrs):
            raise ValueError(f"lrs must be distinct learning rates in (0, 1], got {self.lrs}")
        return self


class EvaluateConfig(Section):
    """The base model and every adapted model on one shared held-out set of documents and their contexts."""

    batch_size: int = Field(ge=1)


class EvaluateInputs(Section):
    """Evaluate scores document tokens from ``exclude_first`` on (the body band) as its primary span."""

    evaluate: EvaluateConfig
    exclude_first: int


class ReportConfig(Section):
    """Power gate, the positive-control floor, and how many examples of kept contexts the report shows."""

    n_examples: int = Field(ge=0)
    power_gate: bool
    gates: list[str] = Field(min_length=1)


class ReportInputs(Section):
    """The report step reads the verdict rule, its own section, and the α / ε grids it summarises."""

    report: ReportConfig
    verdict: VerdictRule
    entropy: EntropyConfig
    verify: VerifyConfig


def load_entropy(params: Path) -> EntropyConfig:
    """``entropylong.entropy``."""
    return load_section(EntropyConfig, f"{PAPER}.entropy", params)


def load_retrieve(params: Path) -> RetrieveConfig:
    """``entropylong.retrieve``."""
    return load_section(RetrieveConfig, f"{PAPER}.retrieve", params)


def load_verify(params: Path) -> VerifyConfig:
    """``entropylong.verify``."""
    return load_section(VerifyConfig, f"{PAPER}.verify", params)


def load_construct(params: Path) -> ConstructConfig:
    """``entropylong.construct``."""
    return load_section(ConstructConfig, f"{PAPER}.construct", params)


def load_train(params: Path) -> TrainConfig:
    """``entropylong.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``entropylong.evaluate`` and ``entropylong.entropy.exclude_first``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          exclude_first=load_entropy(params).exclude_first)


def load_report(params: Path) -> ReportInputs:
    """``entropylong.report``, ``entropylong.verdict``, ``entropylong.entropy`` and ``entropylong.verify``."""
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    verdict = load_section(VerdictRule, f"{PAPER}.verdict", params)
    names = {c.name for c in verdict.checks}
    missing = [g for g in report.gates if g not in names]
    if missing:
        raise ConfigError(f"{PAPER}.report.gates: {missing} are not checks of {PAPER}.verdict")
    if set(report.gates) >= names:
        raise ConfigError(f"{PAPER}.report.gates: at least one check of {PAPER}.verdict must be a claim, not a gate")
    return ReportInputs(report=report, verdict=verdict, entropy=load_entropy(params), verify=load_verify(params))
