"""Step ``data``: the pendulum task and JapaneseVowels with dropped observations, as validated Parquet."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.loaders import load_time_series
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.denots.config import DATASETS, PAPER, DataConfig, PendulumConfig, VowelsConfig, load_data
from stages.denots.expectations import vowels_source_suite
from stages.denots.io import VOWEL_CLASSES, validate
from stages.denots.pendulum import hawkes_times, simulate_pendulum

VOWEL_CHANNELS = 12


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


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
