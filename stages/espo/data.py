"""Step ``data``: 4×4 Sudoku puzzles and Countdown problems, split so no test answer is seen in training."""

from __future__ import annotations

import itertools
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.espo.config import PAPER, CountdownData, DataConfig, SudokuData, load_data
from stages.espo.io import validate
from stages.espo.tasks import countdown_solutions, make_sudoku_puzzle, sudoku_grids

SPLITS = ("train", "val", "test")


@dataclass(frozen=True)
class Paths:
    sudoku: Path = out("Sudoku puzzles: split, grid_id, puzzle, solution (Parquet)")
    countdown: Path = out("Countdown problems: split, numbers, target, one solution (Parquet)")


def split_ids(n: int, train_fraction: float, val_fraction: float, gen: np.random.Generator) -> dict[str, np.ndarray]:
    """A random partition of range(n) into train / val / test."""
    order = gen.permutation(n)
    n_train, n_val = round(n * train_fraction), round(n * val_fraction)
    return {"train": np.sort(order[:n_train]), "val": np.sort(order[n_train:n_train + n_val]),
            "test": np.sort(order[n_train + n_val:])}


def build_sudoku(cfg: SudokuData, seed: int) -> pd.DataFrame:
    """Puzzles per solution grid; the grids of the three splits are disjoint."""
    grids = sudoku_grids()
    ids = split_ids(len(grids), cfg.train_fraction, cfg.val_fraction, rng(seed, PAPER, "sudoku", "split"))
    rows = []
    for split in SPLITS:
        gen = rng(seed, PAPER, "sudoku", split)
        per_grid = cfg.puzzles_per_train_grid if split == "train" else cfg.puzzles_per_eval_grid
        for g in ids[split]:
            for _ in range(per_grid):
                n_blanks = int(gen.integers(cfg.min_blanks, cfg.max_blanks + 1))
                puzzle = make_sudoku_puzzle(grids[g], n_blanks, grids, gen)
                rows.append({"split": split, "grid_id": int(g), "puzzle_id": len(rows),
                             "puzzle": "".join(map(str, puzzle)), "solution": "".join(map(str, grids[g])),
                             "n_blanks": n_blanks})
    return pd.DataFrame(rows)


def build_countdown(cfg: CountdownData, seed: int) -> pd.DataFrame:
    """Problems per number triple; the triples of the three splits are disjoint."""
    triples = [t for t in itertools.combinations(range(1, cfg.max_number + 1), 3)]
    solvable = {t: {k: v for k, v in countdown_solutions(t).items() if k <= cfg.max_target} for t in triples}
    triples = [t for t in triples if solvable[t]]
    ids = split_ids(len(triples), cfg.train_fraction, cfg.val_fraction, rng(seed, PAPER, "countdown", "split"))
    rows = []
    for split in SPLITS:
        gen = rng(seed, PAPER, "countdown", split)
        if split == "train":
            picks = [t for t in ids[split] for _ in range(cfg.targets_per_train_triple)]
        else:
            picks = gen.choice(ids[split], size=cfg.n_val if split == "val" else cfg.n_test, replace=True)
        for t in picks:
            triple = triples[int(t)]
            targets = sorted(solvable[triple])
            target = targets[int(gen.integers(len(targets)))]
            a, b, c = (int(x) for x in gen.permutation(triple))
            rows.append({"split": split, "triple_id": int(t), "example_id": len(rows), "a": a, "b": b, "c": c,
                         "target": int(target), "solution": solvable[triple][target]})
    return pd.DataFrame(rows)


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write both tables."""
    sudoku, countdown = build_sudoku(cfg.sudoku, ctx.seed), build_countdown(cfg.countdown, ctx.seed)
    validate(sudoku, countdown, cfg.countdown)
    write_parquet(sudoku, paths.sudoku)
    write_parquet(countdown, paths.countdown)
    return {f"{name}_{s}": int((df.split == s).sum()) for name, df in (("sudoku", sudoku), ("countdown", countdown))
            for s in SPLITS}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
