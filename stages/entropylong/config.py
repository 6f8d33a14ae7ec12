"""Typed params of ``entropylong`` (params.yaml, section ``entropylong``)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "entropylong"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
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
    heldout_fraction: float = Field(gt=0, lt=1)
    alpha: float = Field(gt=0)
    alphas: list[float] = Field(min_length=1)
    max_positions: int = Field(ge=1)
    min_separation: int = Field(ge=1)
    query_window: int = Field(ge=1)
    batch_size: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> EntropyConfig:
        if self.wiki_docs + self.enwiki_docs < 2:
            raise ValueError("need at least 2 documents (wiki_docs + enwiki_docs), one per split")
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
    max_context_tokens: int = Field(ge=8)
    separator: str
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

    vocab_size: int = Field(ge=300)
    tokenizer_kind: Literal["bpe", "char"] = "bpe"
    target_len: int = Field(ge=32)
    min_context_tokens: int = Field(ge=1)
    sequences_per_doc: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> ConstructConfig:
        if self.min_context_tokens >= self.target_len - 8:
            raise ValueError("min_context_tokens leaves fewer than 8 tokens for the document")
        return self


class ModelSpec(Section):
    """The small causal LM trained from scratch (``stages.core.transformer.TinyGPT``)."""

    d_model: int = Field(ge=8)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)
    max_len: int = Field(ge=32)

    @model_validator(mode="after")
    def _check(self) -> ModelSpec:
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        return self


class TrainConfig(Section):
    """The same model trained on each variant, ``n_seeds`` times (Lightning)."""

    variants: list[Variant] = Field(min_length=1)
    model: ModelSpec
    n_seeds: int = Field(ge=1)
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    warmup_steps: int = Field(ge=0)
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        if len(set(self.variants)) != len(self.variants):
            raise ValueError(f"variants must be unique, got {self.variants}")
        return self


class RulerConfig(Section):
    """The mini-RULER: lengths (some beyond the training length), items per task and length, candidates."""

    lengths: list[int] = Field(min_length=1)
    items_per_task: int = Field(ge=1)
    n_choices: int = Field(ge=2)
    n_keys: int = Field(ge=2, le=8)
    n_values: int = Field(ge=1, le=4)


class EvaluateConfig(Section):
    """Primary: long-context loss gain on one shared held-out set; secondary: the mini-RULER."""

    ruler: RulerConfig
    batch_size: int = Field(ge=1)


class EvaluateInputs(Section):
    """Evaluate needs the model's max length to refuse mini-RULER lengths it cannot run."""

    evaluate: EvaluateConfig
    max_len: int


class ReportConfig(Section):
    """Power gate, the positive-control floor, and how many examples of kept contexts the report shows."""

    n_examples: int = Field(ge=0)
    power_gate: bool
    min_content_gain: float = Field(ge=0)


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
    """``entropylong.evaluate`` and ``entropylong.train.model.max_len``."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          max_len=load_train(params).model.max_len)


def load_report(params: Path) -> ReportInputs:
    """``entropylong.report``, ``entropylong.verdict``, ``entropylong.entropy`` and ``entropylong.verify``."""
    return ReportInputs(report=load_section(ReportConfig, f"{PAPER}.report", params),
                        verdict=load_section(VerdictRule, f"{PAPER}.verdict", params),
                        entropy=load_entropy(params), verify=load_verify(params))
