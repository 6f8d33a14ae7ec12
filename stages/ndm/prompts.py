"""Step ``prompts``: templated IOI and greater-than prompts, disjoint sets for fitting NDM and for patching."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.ndm.config import PAPER, TASKS, PromptsConfig, load_prompts
from stages.ndm.expectations import prompts_suite
from stages.ndm.templates import make_prompts


@dataclass(frozen=True)
class Paths:
    prompts: Path = out("prompts with their corrupted twins, answers and split (Parquet)")


def run(cfg: PromptsConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Draw n_fit + n_patch distinct prompts per task; the first n_fit fit NDM, the rest are patched."""
    rows = []
    for task in TASKS:
        drawn = make_prompts(task, cfg.n_fit + cfg.n_patch, rng(ctx.seed, PAPER, "prompts", task))
        for i, p in enumerate(drawn):
            rows.append({"prompt_id": f"{task}_{i:04d}", "split": "fit" if i < cfg.n_fit else "patch", **p})
    df = pd.DataFrame(rows)
    validate_table(df, "ndm.prompts", prompts_suite)
    write_parquet(df, paths.prompts)
    return {"prompts": len(df)}


main = Step(PAPER, "prompts", run, load_prompts, Paths)


if __name__ == "__main__":
    main()
