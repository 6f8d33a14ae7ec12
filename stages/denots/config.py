"""Typed params of ``denots`` (params/denots.yaml)."""

from __future__ import annotations

from pathlib import Path
from typing import Literal

from pydantic import Field, model_validator

from stages.core.config import Section, load_section
from stages.core.gates import load_gated_rule
from stages.core.threads import MaxThreads
from stages.core.trainer import TrainerConfig
from stages.core.verdict import VerdictRule

PAPER = "denots"
# the per-seed metrics the report measures (its metrics.json `per_seed`): the only names a verdict
# check may use; every stage refuses a verdict block naming another before it starts work
METRICS = (
    "best_baseline_pendulum",
    "best_baseline_vowels",
    "denots_minus_baseline_pendulum",
    "denots_minus_baseline_vowels",
    "long_vs_d1__anti_feedback",
    "long_vs_d1__no_feedback_gru",
    "long_vs_d1__strict_feedback",
    "long_vs_d1__tanh_mlp",
    "long_r2__anti_feedback",
    "long_r2__no_feedback_gru",
    "long_r2__strict_feedback",
    "long_r2__tanh_mlp",
    "diverged__anti_feedback",
    "diverged__no_feedback_gru",
    "diverged__strict_feedback",
    "diverged__tanh_mlp",
    "baselines_best_at_cap",
    "scale_minus_tolerance",
)
DATASETS = ("pendulum", "vowels")
FieldName = Literal["no_feedback_gru", "tanh_mlp", "strict_feedback", "anti_feedback"]
BaselineName = Literal["gru_delta", "diagonal_ssm", "neural_rde", "neural_cde"]


class HawkesConfig(Section):
    """Self-exciting sampling times: λ(t) = μ + α Σ e^{−β(t − tᵢ)}."""

    mu: float = Field(gt=0)
    alpha: float = Field(ge=0)
    beta: float = Field(gt=0)

    @model_validator(mode="after")
    def _stationary(self) -> HawkesConfig:
        if self.alpha >= self.beta:
            raise ValueError("alpha must be below beta (stationary Hawkes process)")
        return self


class PendulumConfig(Section):
    """Damped pendulums with random length ℓ (the target), damping and release angle."""

    n_train: int = Field(ge=4)
    n_val: int = Field(ge=2)
    n_test: int = Field(ge=2)
    horizon: float = Field(gt=0)
    min_obs: int = Field(ge=4)
    max_obs: int = Field(ge=4)
    length_range: tuple[float, float]
    damping_range: tuple[float, float]
    theta0_range: tuple[float, float]
    gravity: float = Field(gt=0)
    noise_std: float = Field(ge=0)
    hawkes: HawkesConfig

    @model_validator(mode="after")
    def _check(self) -> PendulumConfig:
        if self.min_obs > self.max_obs:
            raise ValueError("min_obs must not exceed max_obs")
        for name in ("length_range", "damping_range", "theta0_range"):
            lo, hi = getattr(self, name)
            if not 0 < lo < hi:
                raise ValueError(f"{name} must satisfy 0 < low < high")
        if self.damping_range[1] ** 2 / 4 >= self.gravity / self.length_range[1]:
            raise ValueError("damping_range must keep every pendulum under-damped")
        return self


class VowelsConfig(Section):
    """JapaneseVowels from the asset layer, with a random drop of observations (irregular sampling)."""

    drop_prob: float = Field(ge=0, lt=0.9)
    val_fraction: float = Field(gt=0, lt=0.5)
    max_train: int | None = Field(default=None, ge=20)
    max_test: int | None = Field(default=None, ge=20)


class DataConfig(Section):
    """Both data sets of the miniature."""

    pendulum: PendulumConfig
    vowels: VowelsConfig


class SolverConfig(Section):
    """The adaptive solver used by every ODE run (dopri5 in the paper's code)."""

    method: Literal["dopri5", "bosh3", "adaptive_heun", "dopri8", "fehlberg2"]
    rtol: float = Field(gt=0, lt=1)
    atol: float = Field(gt=0, lt=1)
    max_num_steps: int = Field(ge=10)


class Tolerance(Section):
    """One point of the tolerance sweep."""

    rtol: float = Field(gt=0, lt=1)
    atol: float = Field(gt=0, lt=1)


class ToleranceSweep(Section):
    """At D = 1, tighten the solver tolerances of one field instead of scaling the horizon."""

    field: FieldName
    tolerances: list[Tolerance] = Field(min_length=1)


class TaskGrid(Section):
    """Horizons D and fields run on one data set; the DeNOTS field of the comparison with baselines."""

    horizons: list[float] = Field(min_length=1)
    fields: list[FieldName] = Field(min_length=1)
    tolerance_sweep: ToleranceSweep | None = None
    max_steps: int | None = Field(default=None, ge=1)  # overrides trainer.max_steps for this data set

    @model_validator(mode="after")
    def _check(self) -> TaskGrid:
        if 1.0 not in self.horizons:
            raise ValueError("horizons must include D = 1 (the reference horizon)")
        if any(d < 1 for d in self.horizons) or len(set(self.horizons)) != len(self.horizons):
            raise ValueError("horizons must be distinct and >= 1")
        if len(set(self.fields)) != len(self.fields):
            raise ValueError("fields must be distinct")
        return self


class BaselineConfig(Section):
    """The baselines; their sizes are matched to the DeNOTS model's parameter count (see grid.build_model)."""

    models: list[BaselineName]
    nrde_window: int = Field(ge=1)


class EarlyStopping(Section):
    """Validation loss every ``eval_every`` steps; stop after ``patience`` evaluations without improvement;
    the best-validation checkpoint is the one kept."""

    eval_every: int = Field(ge=1)
    patience: int = Field(ge=1)


class StabilityConfig(Section):
    """Configurations retrained with every input perturbed by one ulp (same seed, same lrs).

    ``replicate``: every pendulum configuration the verdict reads on ``seeds`` is retrained so, and the verdict is
    computed again with those seeds' values replaced (the verdict under numeric noise, measured)."""

    seeds: list[int] = Field(min_length=1)
    configs: list[str] = Field(default_factory=list)  # "<field or baseline>@<D>" on the pendulum
    replicate: bool = False

    @model_validator(mode="after")
    def _something(self) -> StabilityConfig:
        if not self.configs and not self.replicate:
            raise ValueError("stability needs configs or replicate: true")
        return self


class TrainConfig(Section):
    """Every (data set, model, field, D, tolerance, seed) run, trained with Lightning."""

    hidden: int = Field(ge=2)
    # The solver loop runs thousands of tiny ops; on a busy 2-core box two torch threads made a
    # training step 15x slower than one (measured), so this paper's steps set their own count.
    max_threads: MaxThreads
    n_seeds: int = Field(ge=1)
    batch_size: int = Field(ge=2)
    lrs: list[float] = Field(min_length=1)  # the lr grid; the lr kept is chosen on validation loss
    # one lr per configuration (lr_key), chosen from ``lrs`` on validation loss in a pilot on other seeds; None:
    # every configuration is trained at every lr of ``lrs`` and the lr is chosen in this run
    lr_per_config: dict[str, float] | None = None
    early_stopping: EarlyStopping
    stability: StabilityConfig | None = None
    grad_clip: float = Field(gt=0)
    denots_field: FieldName
    solver: SolverConfig
    pendulum: TaskGrid
    vowels: TaskGrid
    baselines: BaselineConfig
    trainer: TrainerConfig

    @model_validator(mode="after")
    def _check(self) -> TrainConfig:
        for name in DATASETS:
            if self.denots_field not in getattr(self, name).fields:
                raise ValueError(f"denots_field '{self.denots_field}' must be among {name}.fields")
        if len(set(self.lrs)) != len(self.lrs) or any(not 0 < x <= 1 for x in self.lrs):
            raise ValueError("lrs must be distinct and in (0, 1]")
        if self.lr_per_config is not None:
            off = {k: v for k, v in self.lr_per_config.items() if v not in self.lrs}
            if off:
                raise ValueError(f"lr_per_config values must be among lrs {self.lrs}: {off}")
            missing = sorted(set(lr_keys(self)) - set(self.lr_per_config))
            if missing:
                raise ValueError(f"lr_per_config has no lr for {missing}")
            unknown = sorted(set(self.lr_per_config) - set(lr_keys(self)))
            if unknown:
                raise ValueError(f"lr_per_config names configurations the grid does not have: {unknown}")
        if self.stability is not None:
            known = {*self.pendulum.fields, *self.baselines.models}
            for c in self.stability.configs:
                name, _, d = c.partition("@")
                if name not in known or not d or float(d) not in [*self.pendulum.horizons, 1.0]:
                    raise ValueError(f"stability config '{c}' must be <field or baseline>@<pendulum horizon>")
            if any(s >= self.n_seeds for s in self.stability.seeds):
                raise ValueError("stability seeds must be below n_seeds")
        return self


class EvaluateConfig(Section):
    """Evaluation batch size, the pendulum's divergence threshold and the score floors used when a run diverged
    or collapsed."""

    batch_size: int = Field(ge=1)
    pendulum_divergence_r2: float = Field(lt=0)  # a val or test R² below it counts as diverged
    pendulum_score_floor: float = Field(le=0)
    vowels_score_floor: float = Field(ge=0, lt=1)

    @model_validator(mode="after")
    def _check(self) -> EvaluateConfig:
        if self.pendulum_divergence_r2 > self.pendulum_score_floor:
            raise ValueError("pendulum_divergence_r2 must not exceed pendulum_score_floor "
                             "(a diverged run scores the floor)")
        return self


class EvaluateInputs(Section):
    """The evaluate step reads its own section and the training grid and solver."""

    evaluate: EvaluateConfig
    train: TrainConfig


class ReportInputs(Section):
    """The report step reads the verdict rule and which of its checks are gates (positive controls)."""

    verdict: VerdictRule
    gates: list[str] = Field(min_length=1)


def lr_key(dataset: str, name: str, horizon: float, rtol: float) -> str:
    """A configuration without its seed: the unit whose lr ``lr_per_config`` fixes."""
    return f"{dataset}__{name}__D{horizon:g}__rtol{rtol:.0e}"


def lr_keys(cfg: TrainConfig) -> list[str]:
    """Every configuration of the profile's grid (the one-ulp reruns share their configuration's key)."""
    keys = []
    for dataset in DATASETS:
        task = getattr(cfg, dataset)
        keys += [lr_key(dataset, f, d, cfg.solver.rtol) for f in task.fields for d in task.horizons]
        if task.tolerance_sweep is not None:
            keys += [lr_key(dataset, task.tolerance_sweep.field, 1.0, t.rtol) for t in task.tolerance_sweep.tolerances]
        keys += [lr_key(dataset, b, 1.0, cfg.solver.rtol) for b in cfg.baselines.models]
    return list(dict.fromkeys(keys))


def load_data(params: Path) -> DataConfig:
    """``denots.data``."""
    return load_section(DataConfig, f"{PAPER}.data", params)


def load_train(params: Path) -> TrainConfig:
    """``denots.train``."""
    return load_section(TrainConfig, f"{PAPER}.train", params)


def load_evaluate(params: Path) -> EvaluateInputs:
    """``denots.evaluate`` and ``denots.train`` (the grid to evaluate, the solver)."""
    return EvaluateInputs(evaluate=load_section(EvaluateConfig, f"{PAPER}.evaluate", params),
                          train=load_train(params))


def load_report(params: Path) -> ReportInputs:
    """``denots.verdict`` and ``denots.report.gates`` (each gate must be a check; at least one check is a claim)."""
    verdict, gates = load_gated_rule(PAPER, params)
    return ReportInputs(verdict=verdict, gates=gates)
