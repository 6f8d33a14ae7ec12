"""Typed params of ``espo`` (params/espo.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import ConfigError, Section, load_section
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "espo"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "sudoku_best_minus_warmstart_success",
    "sudoku_d1_success",
    "sudoku_espo_minus_d1_success",
    "sudoku_espo_minus_token_elbo_success",
    "sudoku_espo_minus_warmstart_success",
    "sudoku_espo_success",
    "sudoku_token_elbo_clip_fraction",
    "sudoku_token_elbo_success",
)
Task = Literal["sudoku", "countdown"]


class SudokuData(Section):
    """4×4 Sudoku: all 288 grids split by solution grid; puzzles blank random cells (unique solution)."""

    train_fraction: float = Field(gt=0, lt=1)
    val_fraction: float = Field(gt=0, lt=1)
    puzzles_per_train_grid: int = Field(ge=1)
    puzzles_per_eval_grid: int = Field(ge=1)
    min_blanks: int = Field(ge=1, le=12)
    max_blanks: int = Field(ge=1, le=12)

    @model_validator(mode="after")
    def _check(self) -> SudokuData:
        if self.train_fraction + self.val_fraction >= 1:
            raise ValueError("train_fraction + val_fraction must leave grids for the test split")
        if self.min_blanks > self.max_blanks:
            raise ValueError("min_blanks must not exceed max_blanks")
        return self


class CountdownData(Section):
    """Countdown with 3 numbers in 1..max_number; targets reachable as (x∘y)∘z in 1..max_target; split by triple."""

    max_number: int = Field(ge=3, le=99)
    max_target: int = Field(ge=2, le=999)
    train_fraction: float = Field(gt=0, lt=1)
    val_fraction: float = Field(gt=0, lt=1)
    targets_per_train_triple: int = Field(ge=1)
    n_val: int = Field(ge=1)
    n_test: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> CountdownData:
        if self.train_fraction + self.val_fraction >= 1:
            raise ValueError("train_fraction + val_fraction must leave triples for the test split")
        return self


class DataConfig(Section):
    """Both tasks' generators."""

    sudoku: SudokuData
    countdown: CountdownData


class ModelConfig(Section):
    """The masked-diffusion transformer (core bidirectional blocks)."""

    d_model: int = Field(ge=8)
    n_layers: int = Field(ge=1, le=24)
    n_heads: int = Field(ge=1)

    @model_validator(mode="after")
    def _check(self) -> ModelConfig:
        if self.d_model % self.n_heads:
            raise ValueError("d_model must be divisible by n_heads")
        return self


class WarmstartConfig(Section):
    """Supervised masked-diffusion warm start; the checkpoint is chosen on validation success."""

    tasks: list[Task] = Field(min_length=1)
    model: ModelConfig
    batch_size: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    eval_every: int = Field(ge=1)
    n_val_eval: int = Field(ge=1)
    sampler_steps: int = Field(ge=1)
    target_success: tuple[float, float]
    max_threads: MaxThreads  # tiny matmuls: a second thread only adds synchronisation cost
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> WarmstartConfig:
        low, high = self.target_success
        if not 0 <= low <= high <= 1:
            raise ValueError("target_success must be (low, high) with 0 <= low <= high <= 1")
        if len(set(self.tasks)) != len(self.tasks):
            raise ValueError("tasks must be unique")
        return self


class Variant(Section):
    """One policy objective: d1 (mean-field tokens), token_elbo (ELBO-term tokens) or espo (sequence)."""

    objective: Literal["d1", "token_elbo", "espo"]
    kl: Literal["k1", "k2", "k3"] = "k2"
    per_token_ratio: bool = True


class GridEntry(Section):
    """Which variants run on which task, with how many seeds."""

    task: Task
    variants: list[str] = Field(min_length=1)
    n_seeds: int = Field(ge=1)


class RLConfig(Section):
    """GRPO-style loop shared by every objective (ESPO §4 recipe, scaled down)."""

    variants: dict[str, Variant]
    grid: list[GridEntry] = Field(min_length=1)
    iterations: int = Field(ge=1)
    prompts_per_iteration: int = Field(ge=1)
    group_size: int = Field(ge=2)
    inner_updates: int = Field(ge=1)
    lr: float = Field(gt=0, le=1)
    clip_eps: float = Field(gt=0, lt=1)
    beta: float = Field(ge=0)
    mc_samples: int = Field(ge=1)
    complementary_masks: bool
    d1_prompt_mask: float = Field(ge=0, lt=1)
    rollout_steps: int = Field(ge=1)
    temperature: float = Field(gt=0)
    grad_clip: float = Field(gt=0)
    max_threads: MaxThreads  # tiny matmuls: a second thread only adds synchronisation cost

    @model_validator(mode="after")
    def _check(self) -> RLConfig:
        for entry in self.grid:
            unknown = [v for v in entry.variants if v not in self.variants]
            if unknown:
                raise ValueError(f"grid variants {unknown} are not defined under variants")
        return self


class EvaluateConfig(Section):
    """Greedy iterative unmasking on the held-out test split; collapse and stall definitions."""

    sampler_steps: int = Field(ge=1)
    collapse_fraction: float = Field(gt=0, lt=1)
    tail_fraction: float = Field(gt=0, le=1)
    stall_gain: float = Field(ge=0)
    sample_temperature: float = Field(gt=0)
    n_samples: int = Field(ge=1)
    max_threads: MaxThreads  # tiny matmuls: a second thread only adds synchronisation cost


class ReportConfig(Section):
    """Positive controls: verdict checks that must hold on every seed before the claim checks count."""

    gates: list[str] = Field(min_length=1)


class ReportInputs(Section):
    """The report step reads the verdict rule and its gates, and the data and RL settings its prose states."""

    verdict: VerdictRule
    report: ReportConfig
    data: DataConfig
    rl: RLConfig
    paper_rl: RLConfig  # ``espo.rl`` at the `paper` profile, the scale the report points to


def load_data(params: Path) -> DataConfig:
    """``espo.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_warmstart(params: Path) -> WarmstartConfig:
    """``espo.warmstart``."""
    return load_section(WarmstartConfig, f"{PAPER}.warmstart", params)


def load_rl(params: Path) -> RLConfig:
    """``espo.rl``."""
    return load_section(RLConfig, f"{PAPER}.rl", params)


def load_evaluate(params: Path) -> EvaluateConfig:
    """``espo.evaluate``."""
    return load_section(EvaluateConfig, f"{PAPER}.evaluate", params)


def load_report(params: Path) -> ReportInputs:
    """``espo.verdict``, ``espo.report``, ``espo.data`` and ``espo.rl`` (also at the `paper` profile)."""
    rule = load_section(VerdictRule, f"{PAPER}.verdict", params)
    report = load_section(ReportConfig, f"{PAPER}.report", params)
    unknown = set(report.gates) - {c.metric for c in rule.checks}
    if unknown:
        raise ConfigError(f"{PAPER}.report.gates names metrics the verdict block does not check: {sorted(unknown)}")
    return ReportInputs(verdict=rule, report=report, data=load_data(params),
                        rl=load_rl(params), paper_rl=load_section(RLConfig, f"{PAPER}.rl", params, profile="paper"))
