"""Step ``ppo``: PPO from the warm-started policy under each reward scheme (a)-(d) and seed; test curves.

The (scheme, seed) runs are independent and go over worker processes (stages/core/workers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.tokenizer import SmallTokenizer
from stages.core.workers import map_runs
from stages.text2grad.config import PAPER, ModelSpec, PpoConfig, load_ppo
from stages.text2grad.expectations import curves_suite
from stages.text2grad.io import model_file, read_tables
from stages.text2grad.models import RewardFormat, policy_prompt
from stages.text2grad.span_ppo import SpanPPO, train_scheme
from stages.text2grad.training import build_lm

# scheme → the reward model whose word scores it uses (None: the critic's own labels, the oracle arms)
REWARD_MODEL = {"scalar": "critique", "text2grad": "critique", "dense": "critique", "no_critique": "no_critique",
                "oracle_token": None, "oracle_terminal": None}
COLUMNS = ["scheme", "seed", "step", "rouge_l", "rouge_p", "rouge_r", "fact_f1", "reward", "kl", "length"]


@dataclass(frozen=True)
class Paths:
    sources: Path = inp("sources (ppo prompts, test prompts and references)")
    outputs: Path = inp("annotated outputs (read for validation of the data step's pair)")
    tokenizer: Path = inp("tokenizer")
    sft: Path = inp("warm-started policy folder")
    reward_models: Path = inp("reward models folder")
    curves: Path = out("test metrics per scheme, seed and evaluation step (Parquet)")


def load_lm(folder: Path, file: str) -> Any:
    """A TinyGPT from ``<folder>/<file>`` and the folder's manifest."""
    manifest = read_json(folder / "manifest.json")
    lm = build_lm(ModelSpec(**manifest["model"]), manifest["vocab_size"], seed=0)
    lm.load_state_dict(load_safetensors(folder / file))
    return lm.eval()


@dataclass(frozen=True)
class Shared:
    """What every run reads: the config, the model and tokenizer files, the PPO and test prompts, the seed."""

    cfg: PpoConfig
    tokenizer: Path
    sft: Path
    reward_models: Path
    train_prompts: list[list[int]]
    train_sources: list[str]
    test_prompts: list[list[int]]
    test_sources: list[str]
    test_references: list[str]
    seed: int


def read_inputs(cfg: PpoConfig, paths: Paths, seed: int) -> Shared:
    """The PPO prompts and the first ``n_eval`` test prompts (each sorted by id), as every run reads them."""
    sources, _ = read_tables(paths)
    tok = SmallTokenizer.load(paths.tokenizer)
    train = sources[sources.split == "ppo"].sort_values("id")
    test = sources[sources.split == "test"].sort_values("id").head(cfg.n_eval)
    return Shared(cfg, Path(paths.tokenizer), Path(paths.sft), Path(paths.reward_models),
                  [policy_prompt(tok, s) for s in train.source], list(train.source),
                  [policy_prompt(tok, x) for x in test.source], list(test.source), list(test.reference), seed)


def ppo_run(job: tuple[str, int], sh: Shared) -> list[dict[str, float]]:
    """One (scheme, seed index) PPO run from the warm start, seeded from the job alone: its test curve."""
    scheme, s = job
    tok = SmallTokenizer.load(sh.tokenizer)
    sft_lm = load_lm(sh.sft, "policy.safetensors")
    seed = derive_seed(sh.seed, PAPER, "ppo", s) % 2**32
    name = REWARD_MODEL[scheme]
    rm = None if name is None else load_lm(sh.reward_models, model_file(name, s))
    fmt = None if name is None else RewardFormat(tok, name == "critique")
    runner = SpanPPO(sh.cfg, scheme, tok, sft_lm, rm, fmt, seed)
    eval_args = {"prompts": sh.test_prompts, "sources": sh.test_sources, "references": sh.test_references,
                 "seed": derive_seed(sh.seed, PAPER, "eval", s) % 2**32}
    return train_scheme(runner, sh.train_prompts, sh.train_sources, eval_args, seed)


def run(cfg: PpoConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every scheme × seed from one warm start over ``threads / max_threads`` processes, same prompts and budget
    per seed; seed s uses RM pair s."""
    sh = read_inputs(cfg, paths, ctx.seed)
    rm_seeds = int(read_json(paths.reward_models / "manifest.json")["n_seeds"])
    if rm_seeds < cfg.n_seeds:
        raise ValueError(f"{paths.reward_models}: reward models for {rm_seeds} seeds, PPO needs {cfg.n_seeds}")
    runs = [(scheme, s) for s in range(cfg.n_seeds) for scheme in cfg.schemes]
    results = map_runs(ppo_run, runs, sh, threads=ctx.threads, max_threads=cfg.max_threads, desc="ppo runs")
    rows = [{"scheme": scheme, "seed": s, **point}
            for (scheme, s), curve in zip(runs, results, strict=True) for point in curve]
    curves = pd.DataFrame(rows)[COLUMNS]
    validate_table(curves, f"{PAPER}.curves", curves_suite(len(runs) * len(curves.step.unique())))
    write_parquet(curves, paths.curves)
    final = curves[curves.step == cfg.steps].groupby("scheme").rouge_l.mean()
    return {f"final_rouge_{k}": float(v) for k, v in final.items()}


main = Step(PAPER, "ppo", run, load_ppo, Paths)


if __name__ == "__main__":
    main()
