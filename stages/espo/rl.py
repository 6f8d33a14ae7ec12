"""Step ``rl``: the GRPO-style loop, once per (task, objective variant, seed), from the warm start.

Everything is shared across objectives (prompts, G samples per prompt, group-relative
advantages without std scaling, μ inner updates, clipping, β, the reference model, the
seeded generator); only the likelihood proxy and the action granularity differ:
d1 (mean-field token ratios), token_elbo (ELBO-term token ratios) or espo (sequence ratio).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, read_json, save_safetensors, write_json, write_parquet
from stages.core.rl import clip_fraction, group_relative_advantages, kl_estimate
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import in_worker, map_runs
from stages.espo.config import PAPER, ModelConfig, RLConfig, Variant, load_rl
from stages.espo.diffusion import MaskedDiffusionLM, load_policy, sample
from stages.espo.elbo import (
    elbo_mask_samples,
    elbo_token_terms,
    espo_loss,
    mean_field_logprobs,
    token_level_loss,
)
from stages.espo.expectations import rl_log_suite
from stages.espo.io import Examples, read_tables, task_examples
from stages.espo.tasks import decode


@dataclass(frozen=True)
class Paths:
    sudoku: Path = inp("Sudoku table")
    countdown: Path = inp("Countdown table")
    warmstart: Path = inp("warm-start weights and manifest")
    models: Path = out("folder: <task>__<variant>__s<seed>.safetensors and manifest.json")
    rl_log: Path = out("one row per (run, iteration): reward, loss, clip fraction, ratio spread, KL (Parquet)")


def run_name(task: str, variant: str, seed_index: int) -> str:
    """File-safe name of one RL run."""
    return f"{task}__{variant}__s{seed_index}"


def policy_terms(model: torch.nn.Module, variant: Variant, prompt: torch.Tensor, completion: torch.Tensor,
                 noise: torch.Tensor) -> torch.Tensor:
    """Per-token likelihood proxy (B, L): d1 mean-field log-probs, or the ELBO's per-token terms."""
    if variant.objective == "d1":
        return mean_field_logprobs(model, prompt, completion, noise)
    return elbo_token_terms(model, prompt, completion, noise)


def log_ratio_spread(log_ratio: torch.Tensor) -> dict[str, float]:
    """Spread of the importance ratios of a batch's actions: std and max of |log ρ| (0 for an empty batch)."""
    x = log_ratio.detach().double()
    if not x.numel():
        return {"log_ratio_std": 0.0, "log_ratio_max": 0.0}
    return {"log_ratio_std": float(x.std(correction=0)), "log_ratio_max": float(x.abs().max())}


def objective_loss(variant: Variant, new: torch.Tensor, old: torch.Tensor, ref: torch.Tensor, adv: torch.Tensor,
                   noise: torch.Tensor, cfg: RLConfig) -> tuple[torch.Tensor, dict[str, float]]:
    """The variant's loss and its diagnostics: clip fraction, ratio spread and the KL term (sequence or token level).

    The actions are sequences for ESPO and tokens otherwise; ``log_ratio_std`` and ``log_ratio_max`` are the
    standard deviation and the largest |log ρ| over those actions (token-level ELBO ratios can reach
    e^±10 and more, so the spread is measured on the log scale); ``kl`` is the objective's own KL
    estimate before β.
    With complementary ELBO masks every completion token carries an ELBO term, so the token-ELBO
    mask is all true and, at ratio 1 and β = 0, its gradient equals ESPO's (tests/espo/test_math.py).
    """
    length = new.shape[1]
    if variant.objective == "espo":
        e_new, e_old, e_ref = new.sum(1), old.sum(1), ref.sum(1)
        log_ratio = (e_new - e_old) / (length if variant.per_token_ratio else 1)
        loss = espo_loss(e_new, e_old, e_ref, adv, length, cfg.clip_eps, cfg.beta, variant.kl, variant.per_token_ratio)
        kl = float(kl_estimate((e_new - e_ref).detach(), variant.kl).mean() / length)
        return loss, {"clip_fraction": clip_fraction(log_ratio, cfg.clip_eps), **log_ratio_spread(log_ratio), "kl": kl}
    token_mask = torch.ones_like(new, dtype=torch.bool) if variant.objective == "d1" else noise.any(0)
    loss = token_level_loss(new, old, ref, adv, token_mask, cfg.clip_eps, cfg.beta, variant.kl)
    maskf = token_mask.to(new.dtype)
    kl = float(((kl_estimate((new - ref).detach(), variant.kl) * maskf).sum(1) / maskf.sum(1).clamp_min(1)).mean())
    return loss, {"clip_fraction": clip_fraction(new - old, cfg.clip_eps, token_mask),
                  **log_ratio_spread((new - old)[token_mask]), "kl": kl}


def train_one(policy: MaskedDiffusionLM, train: Examples, variant: Variant, cfg: RLConfig,
              seed: int, desc: str, progress_bar: bool = True) -> list[dict[str, float]]:
    """One RL run in place on ``policy``; returns the per-iteration log."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    reference = copy.deepcopy(policy).requires_grad_(False)
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    length, g = train.completion_length, cfg.group_size
    log = []
    for it in tqdm(range(1, cfg.iterations + 1), desc=desc, unit="it", leave=False, disable=not progress_bar):
        idx = torch.randint(len(train), (cfg.prompts_per_iteration,), generator=gen).repeat_interleave(g)
        prompt = train.prompts[idx]
        completion = sample(policy, prompt, length, cfg.rollout_steps, cfg.temperature, gen)
        rewards = torch.tensor([train.reward(int(i), decode(c)) for i, c in zip(idx, completion, strict=True)])
        adv = group_relative_advantages(rewards.view(-1, g)).view(-1)
        if variant.objective == "d1":  # a fresh prompt mask per inner update (d1), shared by θ, old and ref
            noises = [torch.rand(prompt.shape, generator=gen) < cfg.d1_prompt_mask for _ in range(cfg.inner_updates)]
        else:  # one set of ELBO masks per rollout batch, shared by θ, old and ref (ESPO recipe)
            masks = elbo_mask_samples(len(idx), length, cfg.mc_samples, cfg.complementary_masks, gen)
            noises = [masks] * cfg.inner_updates
        with torch.no_grad():  # a mask set shared by every inner update is scored once
            unique = {id(n): n for n in noises}
            old_of = {k: policy_terms(policy, variant, prompt, completion, n) for k, n in unique.items()}
            ref_of = {k: policy_terms(reference, variant, prompt, completion, n) for k, n in unique.items()}
        losses, stats = [], []
        for noise in noises:
            old, ref = old_of[id(noise)], ref_of[id(noise)]
            new = policy_terms(policy, variant, prompt, completion, noise)
            loss, diag = objective_loss(variant, new, old, ref, adv, noise, cfg)
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
            stats.append(diag)
        first = old_of[id(noises[0])], ref_of[id(noises[0])]
        log.append({"iteration": it, "reward": float(rewards.mean()), "success": float((rewards >= 1).float().mean()),
                    "loss": sum(losses) / len(losses),
                    **{k: sum(d[k] for d in stats) / len(stats) for k in ("clip_fraction", "log_ratio_std", "kl")},
                    "log_ratio_max": max(d["log_ratio_max"] for d in stats),
                    "last_clip_fraction": stats[-1]["clip_fraction"], "last_log_ratio_std": stats[-1]["log_ratio_std"],
                    "logp_minus_ref": float((first[0].sum(1) - first[1].sum(1)).mean())})
    return log


@dataclass(frozen=True)
class Shared:
    """What every RL run reads: the config, the task tables, the warm-start models and the base seed."""

    cfg: RLConfig
    tables: dict[str, pd.DataFrame]
    warmstart: Path
    spec: ModelConfig
    max_len: dict[str, int]
    seed: int


def rl_run(job: tuple[str, str, int], sh: Shared) -> tuple[dict[str, torch.Tensor], list[dict[str, float]]]:
    """One (task, variant, seed index) run from the warm start, seeded from the job alone: final weights and log."""
    task, name, s = job
    policy = load_policy(sh.warmstart, task, sh.spec, sh.max_len[task])
    train = task_examples(sh.tables, task, "train")  # built in the run: its reward closure does not pickle
    log = train_one(policy, train, sh.cfg.variants[name], sh.cfg, derive_seed(sh.seed, PAPER, "rl", task, s),
                    run_name(task, name, s), not in_worker())
    return dict(policy.state_dict()), log


def run(cfg: RLConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every (task, variant, seed) of the grid over ``threads / max_threads`` processes; final weights and curves."""
    tables = read_tables(paths)
    manifest = read_json(Path(paths.warmstart) / "manifest.json")
    jobs = [(entry.task, name, s) for entry in cfg.grid for name in entry.variants for s in range(entry.n_seeds)]
    shared = Shared(cfg, tables, Path(paths.warmstart), ModelConfig(**manifest["model"]),
                    {task: m["max_len"] for task, m in manifest["tasks"].items()}, ctx.seed)
    results = map_runs(rl_run, jobs, shared, threads=ctx.threads, max_threads=cfg.max_threads,
                       desc="espo RL runs (task × variant × seed)")
    frames, runs = [], []
    with atomic_dir(paths.models) as folder:
        for (task, name, s), (state, log) in zip(jobs, results, strict=True):
            rn = run_name(task, name, s)
            save_safetensors(state, folder / f"{rn}.safetensors")
            frames.append(pd.DataFrame(log).assign(run=rn, task=task, variant=name, seed_index=s))
            runs.append({"run": rn, "task": task, "variant": name, "seed_index": s,
                         **cfg.variants[name].model_dump()})
        write_json({"model": manifest["model"], "runs": runs}, folder / "manifest.json")
    rl_log = pd.concat(frames, ignore_index=True)
    validate_table(rl_log, f"{PAPER}.rl_log", rl_log_suite(len(rl_log)))
    write_parquet(rl_log, paths.rl_log)
    return {"runs": len(runs), "iterations": cfg.iterations}


main = Step(PAPER, "rl", run, load_rl, Paths)


if __name__ == "__main__":
    main()
