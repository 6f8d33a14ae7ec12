"""What the refinestat steps share: reading the task table back into per-split data."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import InputError, read_parquet
from stages.refinestat.config import PAPER
from stages.refinestat.expectations import tasks_suite
from stages.refinestat.tasks import TASKS


def read_tasks(path: Path) -> pd.DataFrame:
    """The validated task table."""
    table = read_parquet(path, columns=["task", "split", "role", "row", "variable", "value"])
    tasks = sorted(set(table.task)) if "task" in table else []
    validate_table(table, f"{PAPER}.tasks", tasks_suite(len(table), [t for t in tasks if t in TASKS] or ["-"]))
    return table


def split_data(table: pd.DataFrame, task: str, split: int, role: str) -> dict[str, list[float]] | None:
    """One role's variables as lists (None if the split has no such role)."""
    part = table[(table.task == task) & (table.split == split) & (table.role == role)]
    if part.empty:
        if role == "fit":
            raise InputError(f"task table: no fit rows for {task} split {split}")
        return None
    out = {}
    for variable, g in part.groupby("variable"):
        out[str(variable)] = g.sort_values("row").value.astype(float).tolist()
    missing = set(TASKS[task].variables) - set(out)
    if missing:
        raise InputError(f"task table: {task} split {split} lacks variables {sorted(missing)}")
    return {k: out[k] for k in TASKS[task].variables}


def sizes(data: dict[str, list[float]]) -> dict[str, int]:
    """Each variable's length."""
    return {k: int(np.asarray(v).size) for k, v in data.items()}
