"""Step ``data``: π*, and train/val/test MTD sequences with their true λ, as validated Parquet."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, out, stage_main
from stages.mtd_mirror_descent.config import PAPER, DataConfig, load_data
from stages.mtd_mirror_descent.expectations import sequences_suite, tokens_suite, transition_suite
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


def validate(pi: pd.DataFrame, sequences: pd.DataFrame, tokens: pd.DataFrame) -> tuple[int, int, int]:
    """Validate the three tables against each other's sizes; return (q, m, seq_len)."""
    q = int(pi.from_token.max()) + 1
    m = sum(c.startswith("lambda_") for c in sequences.columns)
    seq_len = int(tokens.pos.max()) + 1
    validate_table(pi, f"{PAPER}.pi", transition_suite(q))
    validate_table(sequences, f"{PAPER}.sequences", sequences_suite(m, len(sequences)))
    validate_table(tokens, f"{PAPER}.tokens", tokens_suite(q, seq_len, len(sequences) * seq_len))
    return q, m, seq_len


def load_split(sequences: pd.DataFrame, tokens: pd.DataFrame, split: str) -> tuple[np.ndarray, np.ndarray]:
    """(tokens (n, seq_len), λ (n, m)) of one split, ordered by seq_id."""
    seqs = sequences[sequences.split == split].sort_values("seq_id")
    toks = tokens[tokens.split == split].sort_values(["seq_id", "pos"])
    lam = seqs[[c for c in seqs.columns if c.startswith("lambda_")]].to_numpy()
    return toks.token.to_numpy().reshape(len(seqs), -1), lam


def read_tables(paths: Any) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame, int]:
    """Read and validate π*, sequences and tokens; return (π*, sequences, tokens, m)."""
    pi_df, sequences, tokens = read_parquet(paths.pi), read_parquet(paths.sequences), read_parquet(paths.tokens)
    q, m, _ = validate(pi_df, sequences, tokens)
    pi = np.zeros((q, q))
    pi[pi_df.from_token, pi_df.to_token] = pi_df.prob
    return pi, sequences, tokens, m


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the tables."""
    pi, sequences, tokens = build_tables(cfg, ctx.seed)
    validate(pi, sequences, tokens)
    write_parquet(pi, paths.pi)
    write_parquet(sequences, paths.sequences)
    write_parquet(tokens, paths.tokens)
    return {"train_tokens": cfg.n_train * cfg.seq_len}


def main() -> None:
    stage_main(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
