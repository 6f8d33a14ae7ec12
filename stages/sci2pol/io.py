"""Readers of the sci2pol tables (each validated on read) and the scorer and variant names they are keyed by."""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.sci2pol.config import PAPER
from stages.sci2pol.expectations import (
    answers_suite,
    losses_suite,
    pairs_suite,
    runs_suite,
    scores_suite,
    task_scores_suite,
)

SCORERS = ["rubric", "lm", "rouge", "bertscore"]  # columns of judge_scores (agree)
VARIANTS = ("none", "unfiltered", "curated")  # bench: no fine-tuning, LoRA on unfiltered, LoRA on curated pairs


def read_pairs(path: Path) -> pd.DataFrame:
    """Read and validate the pairs table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.pairs", pairs_suite(len(df)))
    return df


def read_scores(path: Path) -> pd.DataFrame:
    """Read and validate the scores table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.judge_scores", scores_suite(len(df), SCORERS))
    return df


def read_task_scores(path: Path) -> pd.DataFrame:
    """Read and validate the task-scores table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.bench_scores", task_scores_suite(len(df)))
    return df


def read_answers(path: Path) -> pd.DataFrame:
    """Read and validate the answers table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.bench_answers", answers_suite(len(df)))
    return df


def read_losses(path: Path) -> pd.DataFrame:
    """Read and validate the LoRA losses table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.lora_losses", losses_suite(len(df)))
    return df


def read_runs(path: Path) -> pd.DataFrame:
    """Read and validate the LoRA runs table."""
    df = read_parquet(path)
    validate_table(df, f"{PAPER}.lora_runs", runs_suite(len(df)))
    return df
