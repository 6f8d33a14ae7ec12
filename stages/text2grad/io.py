"""Readers of the text2grad tables (used by every step after ``data``)."""

from __future__ import annotations

from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.text2grad.config import PAPER
from stages.text2grad.expectations import outputs_suite, sources_suite


def validate(sources: pd.DataFrame, outputs: pd.DataFrame) -> None:
    """Validate both tables."""
    validate_table(sources, f"{PAPER}.sources", sources_suite(len(sources)))
    validate_table(outputs, f"{PAPER}.outputs", outputs_suite(len(outputs)))


def read_tables(paths: Any) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Read and validate the sources and outputs."""
    sources, outputs = read_parquet(paths.sources), read_parquet(paths.outputs)
    validate(sources, outputs)
    return sources, outputs


def model_file(name: str, seed: int) -> str:
    """File name of one reward model: ``<variant>_seed<s>.safetensors``."""
    return f"{name}_seed{seed}.safetensors"
