"""Step ``data``: the pendulum task and JapaneseVowels with dropped observations, as validated Parquet.

Also the tensors every later step feeds the models: padded observations (time as channel 0,
the last observation repeated after a sequence ends), lengths, targets and the natural cubic
spline coefficients, normalised with training-split statistics.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.assets.time_series import load_time_series
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, read_parquet, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, inp, out, stage_main
from stages.denots.config import DATASETS, PAPER, DataConfig, PendulumConfig, VowelsConfig, load_data
from stages.denots.expectations import cases_suite, observations_suite, vowels_source_suite
from stages.denots.neural_cde import spline_coefficients
from stages.denots.pendulum import hawkes_times, simulate_pendulum

VOWEL_CLASSES = 9
VOWEL_CHANNELS = 12
MAX_TIME = 1000.0  # seconds (pendulum) or frame index (vowels)


@dataclass(frozen=True)
class Paths:
    vowels_asset: Path = inp("JapaneseVowels asset folder (data/assets/japanese-vowels)")
    datasets: Path = out("folder: pendulum_/vowels_ obs.parquet and cases.parquet")


def pendulum_split(cfg: PendulumConfig, n: int, gen: np.random.Generator) -> tuple[list[np.ndarray], list[Any]]:
    """n pendulums observed at Hawkes times: (times, θ + noise) per case, and (ℓ,) targets."""
    series, targets = [], []
    while len(series) < n:
        times = hawkes_times(cfg.hawkes.mu, cfg.hawkes.alpha, cfg.hawkes.beta, cfg.horizon, gen, cfg.max_obs)
        length, damping, theta0 = (gen.uniform(*cfg.length_range), gen.uniform(*cfg.damping_range),
                                   gen.uniform(*cfg.theta0_range))
        if len(times) < cfg.min_obs:
            continue
        theta = simulate_pendulum(length, damping, theta0, times, cfg.gravity)
        theta = theta + cfg.noise_std * gen.standard_normal(len(times))
        series.append(np.column_stack([times, theta]))
        targets.append(length)
    return series, targets


def to_tables(split: str, series: list[np.ndarray], targets: list[Any]) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Long observations (split, case, obs, t, c0..) and cases (split, case, n_obs, target)."""
    obs = []
    for case, s in enumerate(series):
        df = pd.DataFrame(s[:, 1:], columns=[f"c{i}" for i in range(s.shape[1] - 1)])
        df.insert(0, "split", split)
        df.insert(1, "case", case)
        df.insert(2, "obs", np.arange(len(s)))
        df.insert(3, "t", s[:, 0])
        obs.append(df)
    cases = pd.DataFrame({"split": split, "case": np.arange(len(series)),
                          "n_obs": [len(s) for s in series], "target": np.asarray(targets, dtype=float)})
    return pd.concat(obs, ignore_index=True), cases


def build_pendulum(cfg: PendulumConfig, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Train/val/test pendulum tables, each split from its own random stream."""
    parts = [to_tables(split, *pendulum_split(cfg, n, rng(seed, PAPER, "pendulum", split)))
             for split, n in (("train", cfg.n_train), ("val", cfg.n_val), ("test", cfg.n_test))]
    return (pd.concat([p[0] for p in parts], ignore_index=True), pd.concat([p[1] for p in parts], ignore_index=True))


def drop_observations(x: np.ndarray, drop_prob: float, gen: np.random.Generator) -> np.ndarray:
    """Keep each frame of (channels, length) with probability 1 − p (at least two); rows (t, values...)."""
    keep = gen.uniform(size=x.shape[1]) >= drop_prob
    if keep.sum() < 2:
        keep[:2] = True
    frames = np.flatnonzero(keep)
    return np.column_stack([frames.astype(float), x[:, frames].T])


def build_vowels(cfg: VowelsConfig, asset: Path, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """JapaneseVowels: train split into train/val, optional subsets, frames dropped at random."""
    splits = load_time_series(asset)
    source = pd.DataFrame([{"split": name, "length": x.shape[1], "label": int(y) - 1, "channels": x.shape[0]}
                           for name, part in splits.items() for x, y in zip(part.series, part.labels, strict=True)])
    validate_table(source, f"{PAPER}.vowels_source", vowels_source_suite(VOWEL_CHANNELS, VOWEL_CLASSES))
    gen = rng(seed, PAPER, "vowels", "split")
    order = gen.permutation(len(splits["train"].series))
    n_val = max(1, round(cfg.val_fraction * len(order)))
    chosen = {"val": order[:n_val], "train": order[n_val:][:cfg.max_train],
              "test": gen.permutation(len(splits["test"].series))[:cfg.max_test]}
    parts = []
    for split, idx in chosen.items():
        part = splits["test" if split == "test" else "train"]
        drop = rng(seed, PAPER, "vowels", "drop", split)
        series = [drop_observations(part.series[i], cfg.drop_prob, drop) for i in sorted(idx)]
        parts.append(to_tables(split, series, [int(part.labels[i]) - 1 for i in sorted(idx)]))
    return pd.concat([p[0] for p in parts], ignore_index=True), pd.concat([p[1] for p in parts], ignore_index=True)


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


def load_tasks(folder: Path) -> dict[str, Task]:
    """Both tasks from the data step's folder."""
    return {name: load_task(Path(folder), name) for name in DATASETS}


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write both data sets."""
    tables = {"pendulum": build_pendulum(cfg.pendulum, ctx.seed),
              "vowels": build_vowels(cfg.vowels, paths.vowels_asset, ctx.seed)}
    with atomic_dir(paths.datasets) as folder:
        for name in DATASETS:
            obs, cases = tables[name]
            validate(name, obs, cases)
            write_parquet(obs, folder / f"{name}_obs.parquet")
            write_parquet(cases, folder / f"{name}_cases.parquet")
    return {f"{name}_{split}": int((tables[name][1].split == split).sum())
            for name in DATASETS for split in ("train", "val", "test")}


def main() -> None:
    stage_main(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
