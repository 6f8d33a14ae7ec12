"""The run grid (data set × model × field × D × tolerance × seed), model construction and forward."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import torch
from torch import nn

from stages.core.seeding import derive_seed
from stages.denots.baselines import DiagonalSSM, GRUDelta, NeuralRDE
from stages.denots.config import DATASETS, PAPER, TrainConfig, lr_key
from stages.denots.io import SplitTensors, Task
from stages.denots.neural_cde import DeNOTS, NeuralCDE, SolverSettings
from stages.denots.vector_fields import n_parameters


@dataclass(frozen=True)
class RunSpec:
    """One trained configuration. ``model`` is "denots" (an ODE with ``field``) or a baseline name."""

    dataset: str
    model: str
    field: str
    horizon: float
    rtol: float
    atol: float
    seed_index: int
    group: str  # "horizon" (D sweep), "tolerance" (D = 1, tighter tolerances), "baseline" or "perturbed"
    lr: float = 0.01

    @property
    def name(self) -> str:
        """The field (DeNOTS runs) or the baseline's name."""
        return self.field if self.model == "denots" else self.model

    @property
    def config_id(self) -> str:
        """The run without its learning rate: the unit among which the lr is chosen on validation."""
        tag = "__ulp" if self.group == "perturbed" else ""
        return f"{self.dataset}__{self.name}__D{self.horizon:g}__rtol{self.rtol:.0e}__s{self.seed_index}{tag}"

    @property
    def lr_key(self) -> str:
        """The configuration without seed or perturbation (``lr_per_config`` key)."""
        return lr_key(self.dataset, self.name, self.horizon, self.rtol)

    @property
    def run_id(self) -> str:
        return f"{self.config_id}__lr{self.lr:g}"

    def solver(self, base: SolverSettings) -> SolverSettings:
        """The run's solver: the shared method and step cap with this run's tolerances."""
        return SolverSettings(base.method, self.rtol, self.atol, base.max_num_steps)


def config_grid(cfg: TrainConfig) -> list[RunSpec]:
    """Every configuration of the profile (learning rate not yet set), in a fixed order."""
    runs: list[RunSpec] = []
    base = (cfg.solver.rtol, cfg.solver.atol)
    for dataset in DATASETS:
        task = getattr(cfg, dataset)
        for s in range(cfg.n_seeds):
            runs += [RunSpec(dataset, "denots", f, d, *base, s, "horizon") for f in task.fields for d in task.horizons]
            if task.tolerance_sweep is not None:
                runs += [RunSpec(dataset, "denots", task.tolerance_sweep.field, 1.0, t.rtol, t.atol, s, "tolerance")
                         for t in task.tolerance_sweep.tolerances]
            runs += [RunSpec(dataset, b, "", 1.0, *base, s, "baseline") for b in cfg.baselines.models]
    if cfg.stability is not None:
        if cfg.stability.replicate:
            runs += [replace(r, group="perturbed") for r in list(runs)
                     if r.seed_index in cfg.stability.seeds and reads_for_verdict(r, cfg)]
        listed = {r.config_id for r in runs if r.group == "perturbed"}
        for s in cfg.stability.seeds:
            for c in cfg.stability.configs:
                name, _, d = c.partition("@")
                is_field = name in cfg.pendulum.fields
                spec = RunSpec("pendulum", "denots" if is_field else name, name if is_field else "", float(d),
                               *base, s, "perturbed")
                if spec.config_id not in listed:
                    runs.append(spec)
    return runs


def reads_for_verdict(spec: RunSpec, cfg: TrainConfig) -> bool:
    """Whether a pendulum verdict metric reads this configuration: the default field at every D (DeNOTS's D is
    chosen on validation), every field at D = 1 and the longest D, the tolerance sweep and every baseline."""
    if spec.dataset != "pendulum":
        return False
    if spec.group != "horizon" or spec.field == cfg.denots_field:
        return True
    return spec.horizon in (1.0, max(cfg.pendulum.horizons))


def run_grid(cfg: TrainConfig) -> list[RunSpec]:
    """Every run: each configuration at its pilot-chosen lr (``lr_per_config``), or at each lr of the grid."""
    if cfg.lr_per_config is not None:
        return [replace(spec, lr=cfg.lr_per_config[spec.lr_key]) for spec in config_grid(cfg)]
    return [replace(spec, lr=lr) for spec in config_grid(cfg) for lr in cfg.lrs]


def init_seed(seed: int, spec: RunSpec) -> int:
    """The torch seed of one run: same data-set/seed index → same seed for every field (paired comparison)."""
    return derive_seed(seed, PAPER, "init", spec.dataset, spec.seed_index) % 2**32


def matched_size(build: Callable[[int], nn.Module], target: int, largest: int = 256) -> int:
    """The size argument (1..largest) whose model has the parameter count closest to ``target``."""
    return min(range(1, largest + 1), key=lambda k: (abs(n_parameters(build(k)) - target), k))


def build_model(spec: RunSpec, task: Task, cfg: TrainConfig) -> nn.Module:
    """The model of one run: hidden size ``hidden``; the SSM state and the Neural RDE width are chosen so
    their parameter counts come closest to the DeNOTS model's (the NRDE's log-signature readout may not allow it)."""
    c, h, k = task.n_inputs, cfg.hidden, task.n_outputs
    if spec.model == "denots":
        return DeNOTS(spec.field, c, h, k)
    if spec.model == "gru_delta":
        return GRUDelta(c, h, k)
    target = n_parameters(DeNOTS(cfg.denots_field, c, h, k))
    if spec.model == "diagonal_ssm":
        return DiagonalSSM(c, h, k, matched_size(lambda n: DiagonalSSM(c, h, k, n), target))
    if spec.model == "neural_rde":
        window = cfg.baselines.nrde_window
        return NeuralRDE(c, h, k, matched_size(lambda w: NeuralRDE(c, h, k, w, window), target, 64), window)
    if spec.model == "neural_cde":
        return NeuralCDE(c, h, k, matched_size(lambda w: NeuralCDE(c, h, k, w), target, 64))
    raise ValueError(f"unknown model '{spec.model}'")


def forward(model: nn.Module, spec: RunSpec, data: SplitTensors, idx: torch.Tensor,
            solver: SolverSettings) -> tuple[torch.Tensor, int]:
    """Predictions for the cases ``idx`` and the solver's NFE (0 for discrete baselines)."""
    if spec.model == "denots":
        out = model(data.values[idx], spec.horizon, solver)
        return out, model.last_nfe
    if spec.model == "neural_cde":
        out = model(data.coeffs[idx], solver)
        return out, model.last_nfe
    if spec.model == "neural_rde":
        out = model(data.values[idx], data.lengths[idx], solver)
        return out, model.last_nfe
    return model(data.values[idx], data.lengths[idx]), 0


def loss_fn(task: Task, out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    """MSE on the standardised length (pendulum) or cross-entropy (vowels)."""
    if task.regression:
        return nn.functional.mse_loss(out, target)
    return nn.functional.cross_entropy(out, target)

