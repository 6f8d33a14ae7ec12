"""Stage ``assets-japanese-vowels``: a UEA multivariate classification set bundled with aeon.

JapaneseVowels: 640 utterances (270 train / 370 test) of 9 speakers, 12 LPC cepstrum
channels, variable length (7 to 29 frames). Stored in long form (one row per split,
case and frame), so variable lengths need no padding.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.config import TimeSeriesConfig, load_japanese_vowels
from stages.assets.expectations import time_series_suite
from stages.assets.loaders import SERIES_FILE
from stages.assets.manifest import AssetError, package_dir, package_source, sha256_file, write_manifest
from stages.core.gx import validate_table
from stages.core.io import atomic_dir, write_parquet
from stages.core.stage import StageContext, Step, out

ASSET = "japanese-vowels"
LICENCE = "UEA/UCR time series archive (free for research, cite Bagnall et al. 2018), shipped in aeon (BSD-3-Clause)"


@dataclass(frozen=True)
class Paths:
    series: Path = out("asset folder: series.parquet (long form) + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def to_long(split: str, series: list[np.ndarray], labels: np.ndarray) -> pd.DataFrame:
    """One row per (case, frame) with the channel values as columns c0..c{k-1}."""
    frames = []
    for case, (x, y) in enumerate(zip(series, labels, strict=True)):
        df = pd.DataFrame(x.T, columns=[f"c{i}" for i in range(x.shape[0])])
        df.insert(0, "split", split)
        df.insert(1, "case", case)
        df.insert(2, "t", np.arange(x.shape[1]))
        df.insert(3, "label", str(y))
        frames.append(df)
    return pd.concat(frames, ignore_index=True)


def run(cfg: TimeSeriesConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Read the bundled .ts files with aeon's reader, validate, write Parquet and the manifest."""
    from aeon.datasets import load_from_ts_file

    folder = package_dir("aeon", ASSET, "pip install aeon") / "datasets" / "data" / cfg.dataset
    files = {s: folder / f"{cfg.dataset}_{s.upper()}.ts" for s in ("train", "test")}
    if not all(f.is_file() for f in files.values()):
        raise AssetError(f"asset '{ASSET}': {cfg.dataset} is not bundled with this aeon ({folder})")
    tables, lengths = [], []
    for split, f in files.items():
        x, y = load_from_ts_file(str(f))
        series = [np.asarray(s, dtype=np.float64) for s in x]
        if any(s.shape[0] != cfg.n_channels for s in series):
            raise ValueError(f"asset '{ASSET}': {f.name} has series without {cfg.n_channels} channels")
        lengths += [s.shape[1] for s in series]
        tables.append(to_long(split, series, y))
    df = pd.concat(tables, ignore_index=True)
    labels = sorted(df["label"].unique())
    if len(labels) != cfg.n_classes:
        raise ValueError(f"asset '{ASSET}': {len(labels)} classes, expected {cfg.n_classes}")
    validate_table(df, f"assets.{ASSET}.series", time_series_suite(cfg.n_channels, labels))
    cases = df.groupby("split")["case"].nunique().to_dict()
    with atomic_dir(paths.series) as tmp:
        write_parquet(df, tmp / SERIES_FILE)
        source = package_source("aeon") | {"files": {f.name: sha256_file(f) for f in files.values()}}
        write_manifest(tmp, ASSET, source, LICENCE, report=paths.manifest, details={
            "dataset": cfg.dataset, "channels": cfg.n_channels, "classes": labels,
            "train_cases": int(cases["train"]), "test_cases": int(cases["test"]),
            "min_length": int(min(lengths)), "max_length": int(max(lengths))})
    return {"cases": cases}


main = Step("assets", ASSET, run, load_japanese_vowels, Paths)


if __name__ == "__main__":
    main()
