"""Readers of the espo tables: validation of both tables and their encoding as tensors (used after ``data``)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import read_parquet
from stages.espo.config import PAPER, CountdownData
from stages.espo.expectations import countdown_suite, sudoku_suite
from stages.espo.tasks import countdown_prompt, countdown_reward, encode, sudoku_reward


def validate(sudoku: pd.DataFrame, countdown: pd.DataFrame, cfg_countdown: CountdownData | None = None) -> None:
    """Validate both tables (sizes, formats, ranges)."""
    validate_table(sudoku, f"{PAPER}.sudoku", sudoku_suite(len(sudoku)))
    max_number = cfg_countdown.max_number if cfg_countdown else int(countdown[["a", "b", "c"]].max().max())
    max_target = cfg_countdown.max_target if cfg_countdown else int(countdown.target.max())
    validate_table(countdown, f"{PAPER}.countdown", countdown_suite(len(countdown), max_number, max_target))


@dataclass
class Examples:
    """One task split as tensors: prompts (N, P), reference completions (N, L), and a reward per row."""

    task: str
    prompts: torch.Tensor
    completions: torch.Tensor
    reward: Callable[[int, str], float]

    @property
    def completion_length(self) -> int:
        return self.completions.shape[1]

    def __len__(self) -> int:
        return len(self.prompts)


def countdown_lengths(max_number: int, max_target: int) -> tuple[int, int]:
    """(prompt length, completion length) for numbers ≤ max_number and targets ≤ max_target."""
    d, td = len(str(max_number)), len(str(max_target))
    return 3 * d + 3 + td, 3 * d + 4


def task_examples(tables: dict[str, pd.DataFrame], task: str, split: str) -> Examples:
    """The rows of one task and split, encoded with the shared symbol vocabulary."""
    df = tables[task]
    if task == "sudoku":
        df = df[df.split == split].sort_values("puzzle_id")
        puzzles, solutions = df.puzzle.tolist(), df.solution.tolist()
        return Examples(task, torch.tensor([encode(p, 16) for p in puzzles]),
                        torch.tensor([encode(s, 16) for s in solutions]),
                        lambda i, text: sudoku_reward(puzzles[i], solutions[i], text))
    everything = tables[task]
    p_len, c_len = countdown_lengths(int(everything[["a", "b", "c"]].max().max()), int(everything.target.max()))
    df = df[df.split == split].sort_values("example_id")
    numbers = df[["a", "b", "c"]].to_numpy().tolist()
    targets = df.target.tolist()
    prompts = [encode(countdown_prompt(n, t), p_len) for n, t in zip(numbers, targets, strict=True)]
    return Examples(task, torch.tensor(prompts), torch.tensor([encode(s, c_len) for s in df.solution]),
                    lambda i, text: countdown_reward(numbers[i], targets[i], text))


def read_tables(paths: Any) -> dict[str, pd.DataFrame]:
    """Read and validate both tables."""
    tables = {"sudoku": read_parquet(paths.sudoku), "countdown": read_parquet(paths.countdown)}
    validate(tables["sudoku"], tables["countdown"])
    return tables
