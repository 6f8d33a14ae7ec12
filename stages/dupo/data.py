"""Step ``data``: word problems in four disjoint splits, and every dual question with its filter decision."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.dupo.config import PAPER, DataConfig, load_data
from stages.dupo.io import validate_tables
from stages.dupo.problems import (
    ITEMS,
    NAMES,
    QUESTIONS,
    Problem,
    dual_steps,
    evaluate_chain,
    mask_domain,
    passes_filter,
    random_problem,
    render,
    solution_steps,
    solution_text,
    solve_masked,
)

SPLITS = ("sft", "rl", "val", "test")


@dataclass(frozen=True)
class Paths:
    problems: Path = out("problems: split, signature, numbers, text, worked solution, answer (Parquet)")
    duals: Path = out("dual questions: one per (problem, masked number), solutions count, filter decision (Parquet)")


def split_sizes(cfg: DataConfig) -> dict[str, int]:
    """Problems per split."""
    return {"sft": cfg.n_sft, "rl": cfg.n_rl, "val": cfg.n_val, "test": cfg.n_test}


def dual_rows(problem: Problem, text_args: dict[str, Any], answer: int, cfg: DataConfig) -> list[dict[str, Any]]:
    """Every dual question of one problem: mask each number, solve for it, apply the filter."""
    rows = []
    for i, op in enumerate(problem.ops):
        solutions = solve_masked(problem.ops, problem.numbers, i, answer,
                                 mask_domain(op, cfg.max_number, cfg.max_factor, cfg.max_divisor))
        hidden = problem.numbers[i]
        rows.append({"mask_index": i, "op": op, "hidden": hidden,
                     "masked_text": render(problem, masked=i, **text_args), "n_solutions": len(solutions),
                     "passes_filter": int(passes_filter(solutions)),
                     "solution": solution_text(dual_steps(problem, i, answer), hidden)})
    return rows


def build(cfg: DataConfig, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Problems per split, no expression (template and numbers) in two splits; their duals."""
    seen: set[str] = set()
    problems, duals = [], []
    for split, n in split_sizes(cfg).items():
        gen = rng(seed, PAPER, "data", split)
        made, attempts = 0, 0
        while made < n:
            attempts += 1
            if attempts > 50 * n + 1000:
                raise ValueError(f"{PAPER}.data: cannot draw {n} distinct problems for split '{split}' "
                                 f"(raise max_number or max_ops)")
            problem = random_problem(gen, int(gen.integers(cfg.min_ops, cfg.max_ops + 1)), cfg.max_number,
                                     cfg.max_factor, cfg.max_divisor, cfg.p_final_box)
            if problem.key in seen:
                continue
            seen.add(problem.key)
            text_args = {"template_ids": tuple(int(t) for t in gen.integers(0, 6, len(problem.ops))),
                         "name": str(gen.choice(NAMES)), "item": str(gen.choice(ITEMS)),
                         "question_id": int(gen.integers(len(QUESTIONS)))}
            answer = evaluate_chain(problem.ops, problem.numbers)
            pid = len(problems)
            problems.append({"split": split, "problem_id": pid, "signature": problem.signature,
                             "numbers": ",".join(map(str, problem.numbers)), "text": render(problem, **text_args),
                             "solution": solution_text(solution_steps(problem), answer), "answer": answer})
            duals += [{"split": split, "problem_id": pid, **r} for r in dual_rows(problem, text_args, answer, cfg)]
            made += 1
    return pd.DataFrame(problems), pd.DataFrame(duals)


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write both tables."""
    problems, duals = build(cfg, ctx.seed)
    validate_tables(problems, duals, cfg.min_filter_fail_share)
    write_parquet(problems, paths.problems)
    write_parquet(duals, paths.duals)
    return {**{f"problems_{s}": int((problems.split == s).sum()) for s in SPLITS},
            "dual_filter_fail_share": float(1 - duals.passes_filter.mean())}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
