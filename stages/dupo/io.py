"""Readers of the dupo tables (validated) and their split views (used after ``data``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.dupo.config import PAPER
from stages.dupo.expectations import duals_suite, problems_suite, rl_log_suite


def validate_tables(problems: pd.DataFrame, duals: pd.DataFrame, min_filter_fail_share: float = 0.0) -> None:
    """Validate both tables; the filter must reject at least ``min_filter_fail_share`` of the duals."""
    validate_table(problems, f"{PAPER}.problems", problems_suite(len(problems)))
    validate_table(duals, f"{PAPER}.duals", duals_suite(len(duals), 1 - min_filter_fail_share))


def read_tables(paths: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and validate ``problems`` and ``duals``."""
    problems, duals = read_parquet(paths.problems), read_parquet(paths.duals)
    validate_tables(problems, duals)
    return problems, duals


def split(df: pd.DataFrame, name: str) -> pd.DataFrame:
    """The rows of one split, in problem order."""
    return df[df.split == name].sort_values(["problem_id", *(["mask_index"] if "mask_index" in df else [])]) \
        .reset_index(drop=True)


def read_rl_log(path: Any) -> pd.DataFrame:
    """Read and validate the RL log (one row per run and step)."""
    log = read_parquet(path)
    validate_table(log, f"{PAPER}.rl_log", rl_log_suite(len(log)))
    return log
