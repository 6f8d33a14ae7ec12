"""Readers shared by the sysmobench steps: the validated trace and score tables."""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import InputError, read_parquet
from stages.sysmobench.config import PAPER
from stages.sysmobench.expectations import generated_suite, scores_suite, traces_suite


def read_traces(path: Path) -> pd.DataFrame:
    """The validated trace table, sorted by seed, system, trace and step."""
    traces = read_parquet(path)
    validate_table(traces, f"{PAPER}.traces", traces_suite(len(traces)))
    return traces.sort_values(["seed_index", "system", "trace", "step"], ignore_index=True)


def trace_states(traces: pd.DataFrame, seed_index: int, system: str) -> list[list[dict[str, str]]]:
    """The logged states (variable -> TLA+ literal) of each trace of one seed and system."""
    part = traces[(traces.seed_index == seed_index) & (traces.system == system)]
    if part.empty:
        raise InputError(f"{PAPER}.traces: no trace of system '{system}' for seed {seed_index}")
    return [[json.loads(s) for s in g.state] for _, g in part.groupby("trace", sort=True)]


def read_scores(path: Path) -> pd.DataFrame:
    """The validated score table."""
    scores = read_parquet(path)
    validate_table(scores, f"{PAPER}.scores", scores_suite(len(scores)))
    return scores


def read_generated(path: Path) -> pd.DataFrame:
    """The validated table of generated specs."""
    generated = read_parquet(path)
    validate_table(generated, f"{PAPER}.generated", generated_suite(len(generated)))
    return generated.sort_values(["seed_index", "system", "generator"], ignore_index=True)
