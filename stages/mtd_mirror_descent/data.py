"""Step ``data``: π*, and train/val/test MTD sequences with their true λ, as validated Parquet."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.core.threads import cap_threads
from stages.mtd_mirror_descent.config import PAPER, DataConfig, load_data
from stages.mtd_mirror_descent.io import validate
from stages.mtd_mirror_descent.mtd import sample_sequences, transition_matrix

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Paths:
    pi: Path = out("transition matrix π* (Parquet, long format)")
    sequences: Path = out("one row per sequence: split, id, true λ")
    tokens: Path = out("tokens in long format: split, seq_id, pos, token")


def build_tables(cfg: DataConfig, seed: int) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """π* and the three splits, each split from its own random stream."""
    pi = transition_matrix(cfg.q, cfg.pi_concentration, cfg.pi_floor, rng(seed, PAPER, "pi"))
    pi_df = pd.DataFrame([{"from_token": a, "to_token": b, "prob": float(pi[a, b])}
                          for a in range(cfg.q) for b in range(cfg.q)])
    seq_frames, tok_frames = [], []
    for split in SPLITS:
        n = {"train": cfg.n_train, "val": cfg.n_val, "test": cfg.n_test}[split]
        tokens, lam, _ = sample_sequences(pi, cfg.m, cfg.seq_len, n, cfg.dirichlet_alpha, rng(seed, PAPER, split))
        seq_frames.append(pd.DataFrame({"split": split, "seq_id": np.arange(n),
                                        **{f"lambda_{g + 1}": lam[:, g] for g in range(cfg.m)}}))
        tok_frames.append(pd.DataFrame({"split": split, "seq_id": np.repeat(np.arange(n), cfg.seq_len),
                                        "pos": np.tile(np.arange(cfg.seq_len), n), "token": tokens.ravel()}))
    return pi_df, pd.concat(seq_frames, ignore_index=True), pd.concat(tok_frames, ignore_index=True)


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the tables."""
    cap_threads(cfg.max_threads)
    pi, sequences, tokens = build_tables(cfg, ctx.seed)
    validate(pi, sequences, tokens)
    write_parquet(pi, paths.pi)
    write_parquet(sequences, paths.sequences)
    write_parquet(tokens, paths.tokens)
    return {"train_tokens": cfg.n_train * cfg.seq_len}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
