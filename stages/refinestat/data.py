"""Step ``data``: the bundled tables as tasks, with a fit / held-out split per seed for the exchangeable ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import InputError, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.refinestat.config import PAPER, DataConfig, load_data
from stages.refinestat.expectations import diabetes_suite, dugongs_suite, eight_schools_suite, tasks_suite


@dataclass(frozen=True)
class Paths:
    tables: Path = inp("folder of the bundled CSV tables (with their citations)")
    tasks: Path = out("long table: task, split, role (fit / heldout), row, variable, value")


def read_table(path: Path, name: str, suite: Any) -> pd.DataFrame:
    """A bundled CSV (comment lines hold its citation), validated."""
    try:
        df = pd.read_csv(path, comment="#")
    except (OSError, ValueError, pd.errors.ParserError) as err:
        raise InputError(f"{path}: not a readable CSV table: {err}") from None
    validate_table(df, f"{PAPER}.{name}", suite)
    return df


def diabetes_table() -> pd.DataFrame:
    """scikit-learn's bundled diabetes data (Efron et al. 2004): raw BMI and one-year progression."""
    from sklearn.datasets import load_diabetes

    frame = load_diabetes(scaled=False, as_frame=True).frame
    validate_table(frame, f"{PAPER}.diabetes", diabetes_suite)
    return frame


def standardise_on(values: np.ndarray, fit: np.ndarray) -> np.ndarray:
    """Every value standardised with the mean and standard deviation of the fit rows alone (held-out rows never
    inform the transform)."""
    ref = values[fit]
    return (values - ref.mean()) / ref.std(ddof=1)


def long_rows(task: str, split: int, role: str, columns: dict[str, np.ndarray]) -> list[dict[str, Any]]:
    """One row per value of one split's role."""
    return [{"task": task, "split": split, "role": role, "row": i, "variable": v, "value": float(x)}
            for v, values in columns.items() for i, x in enumerate(values)]


def build_table(cfg: DataConfig, tables: Path, seed: int) -> pd.DataFrame:
    """Every task's data, split per seed index under a global seed; held-out rows never fit or select anything."""
    rows: list[dict[str, Any]] = []
    for task in cfg.tasks:
        for split in range(cfg.n_splits):
            gen = rng(seed, PAPER, "split", task, split)
            if task == "eight_schools":
                t = read_table(tables / "eight_schools.csv", "eight_schools", eight_schools_suite)
                rows += long_rows(task, split, "fit", {"y": t.y.to_numpy(), "sigma": t.sigma.to_numpy()})
            elif task == "dugongs":
                t = read_table(tables / "dugongs.csv", "dugongs", dugongs_suite)
                n_held = max(1, round(cfg.heldout_fraction * len(t)))
                order = gen.permutation(len(t))
                for role, idx in (("fit", np.sort(order[n_held:])), ("heldout", np.sort(order[:n_held]))):
                    rows += long_rows(task, split, role, {"age": t.age.to_numpy()[idx],
                                                          "y": t.length.to_numpy()[idx]})
            else:
                t = diabetes_table()
                order = gen.permutation(len(t))
                fit, held = order[:cfg.diabetes_n_fit], order[cfg.diabetes_n_fit:cfg.diabetes_n_fit
                                                              + cfg.diabetes_n_heldout]
                bmi = standardise_on(t.bmi.to_numpy(), fit)
                for role, idx in (("fit", np.sort(fit)), ("heldout", np.sort(held))):
                    rows += long_rows(task, split, role, {"bmi": bmi[idx], "y": t.target.to_numpy()[idx]})
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.tasks", tasks_suite(len(table), list(cfg.tasks)))
    return table


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Write every task's data; the held-out rows of a split are never used to fit or to select."""
    table = build_table(cfg, paths.tables, ctx.seed)
    write_parquet(table, paths.tasks)
    return {"n_values": len(table)}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
