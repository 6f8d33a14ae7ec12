"""Readers of the data step's tables (π*, sequences, tokens), shared by the train and evaluate steps."""

from __future__ import annotations

from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.mtd_mirror_descent.config import PAPER
from stages.mtd_mirror_descent.expectations import PI_COLUMNS, sequences_suite, tokens_suite, transition_suite


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
    pi_df = read_parquet(paths.pi, columns=PI_COLUMNS)
    sequences, tokens = read_parquet(paths.sequences), read_parquet(paths.tokens)
    q, m, _ = validate(pi_df, sequences, tokens)
    pi = np.zeros((q, q))
    pi[pi_df.from_token, pi_df.to_token] = pi_df.prob
    return pi, sequences, tokens, m
