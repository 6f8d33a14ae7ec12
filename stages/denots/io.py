"""Readers of the data step's tables (validated), and the tensors every later step feeds the models.

The tensors: padded observations (time as channel 0, the last observation repeated after a
sequence ends), lengths, targets and the natural cubic spline coefficients, normalised with
training-split statistics.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.denots.config import DATASETS, PAPER
from stages.denots.expectations import cases_suite, observations_suite
from stages.denots.neural_cde import spline_coefficients

VOWEL_CLASSES = 9
MAX_TIME = 1000.0  # seconds (pendulum) or frame index (vowels)


def validate(name: str, obs: pd.DataFrame, cases: pd.DataFrame) -> None:
    """Validate one data set's two tables; the observation count must match the cases' lengths."""
    n_channels = sum(c.startswith("c") and c[1:].isdigit() for c in obs.columns)
    max_obs = int(cases.n_obs.max())
    target = (0.0, 100.0) if name == "pendulum" else (0, VOWEL_CLASSES - 1)
    n_rows = int(cases.n_obs.sum())
    validate_table(obs, f"{PAPER}.{name}_obs", observations_suite(n_channels, max_obs, MAX_TIME, n_rows))
    validate_table(cases, f"{PAPER}.{name}_cases", cases_suite(len(cases), 2, max_obs, *target))


def read_dataset(folder: Path, name: str) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and validate one data set's tables."""
    obs, cases = read_parquet(folder / f"{name}_obs.parquet"), read_parquet(folder / f"{name}_cases.parquet")
    validate(name, obs, cases)
    return obs, cases


@dataclass(frozen=True)
class SplitTensors:
    """One split, ready for every model."""

    values: torch.Tensor
    lengths: torch.Tensor
    targets: torch.Tensor
    coeffs: torch.Tensor


@dataclass(frozen=True)
class Task:
    """A data set as tensors: splits, its kind, the number of model inputs/outputs, the target scale."""

    name: str
    splits: dict[str, SplitTensors]
    n_inputs: int
    n_outputs: int
    target_mean: float
    target_std: float
    regression: bool


def padded(obs: pd.DataFrame, cases: pd.DataFrame, columns: list[str], length: int) -> tuple[np.ndarray, np.ndarray]:
    """(n, L, len(columns)) observations ordered by case, last observation repeated to L; lengths."""
    cases = cases.sort_values("case")
    arr = np.zeros((len(cases), length, len(columns)))
    grouped = {c: g.sort_values("obs")[columns].to_numpy() for c, g in obs.groupby("case")}
    for i, case in enumerate(cases.case):
        x = grouped[case]
        arr[i, : len(x)] = x
        arr[i, len(x):] = x[-1]
    return arr, cases.n_obs.to_numpy()


def load_task(folder: Path, name: str) -> Task:
    """Tables → tensors; time scaled to [0, 1] and channels standardised with training statistics."""
    obs, cases = read_dataset(folder, name)
    columns = ["t", *[c for c in obs.columns if c.startswith("c") and c[1:].isdigit()]]
    length = int(cases.n_obs.max())
    train = obs[obs.split == "train"]
    scale = np.array([train.t.max(), *train[columns[1:]].std(ddof=0).to_numpy()])
    shift = np.array([0.0, *train[columns[1:]].mean().to_numpy()])
    regression = name == "pendulum"
    y_train = cases[cases.split == "train"].target.to_numpy()
    mean, std = (float(y_train.mean()), float(y_train.std())) if regression else (0.0, 1.0)
    splits = {}
    for split in ("train", "val", "test"):
        arr, lengths = padded(obs[obs.split == split], cases[cases.split == split], columns, length)
        values = torch.as_tensor((arr - shift) / scale, dtype=torch.float32)
        y = cases[cases.split == split].sort_values("case").target.to_numpy()
        targets = (torch.as_tensor((y - mean) / std, dtype=torch.float32).unsqueeze(-1) if regression
                   else torch.as_tensor(y, dtype=torch.long))
        splits[split] = SplitTensors(values, torch.as_tensor(lengths), targets, spline_coefficients(values))
    n_outputs = 1 if regression else VOWEL_CLASSES
    return Task(name, splits, len(columns), n_outputs, mean, std, regression)


def perturb_one_ulp(x: torch.Tensor) -> torch.Tensor:
    """Every entry moved to the next representable float towards +inf (the numeric-noise probe)."""
    return torch.nextafter(x, torch.full_like(x, float("inf")))


def perturbed_task(task: Task) -> Task:
    """The task with every input value (times included) one ulp larger; targets unchanged."""
    splits = {}
    for name, d in task.splits.items():
        values = perturb_one_ulp(d.values)
        splits[name] = SplitTensors(values, d.lengths, d.targets, spline_coefficients(values))
    return replace(task, splits=splits)


def load_tasks(folder: Path) -> dict[str, Task]:
    """Both tasks from the data step's folder."""
    return {name: load_task(Path(folder), name) for name in DATASETS}
