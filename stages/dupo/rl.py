"""Step ``rl``: GRPO from the SFT model, once per (reward, seed), with equal budgets.

Everything but the reward is shared (prompts, group size, sampling temperature, clipping, the
k-estimator KL to the SFT model, the optimiser, the seeded generator): ``oracle`` rewards the
parsed answer against the label (RLVR); ``dupo`` rewards the dual reconstruction of a hidden
number chosen among those the rollout's own answer determines uniquely (the label-free filter:
no label read, a rollout whose answer pins down no number gets 0); ``dupo_nofilter`` hides any
number; ``random`` (the negative control) draws each reward as a fair coin, independent of the
output, so what GRPO, the KL and sampling do without an informative reward is measured too.
Every RL problem is a prompt (no problem is selected with its label). Every run also logs the
oracle accuracy and the dual reward of its own rollouts, so the agreement of the label-free
reward with the label is measured beside the curves.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import atomic_dir, read_json, save_safetensors, write_json, write_parquet
from stages.core.rl import clip_fraction, clipped_token_loss, group_relative_advantages, kl_estimate
from stages.core.sampler import sample
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.tokenizer import SmallTokenizer
from stages.core.transformer import TinyGPT
from stages.core.workers import in_worker, map_runs
from stages.dupo.config import PAPER, Domains, ModelConfig, RLConfig, load_rl
from stages.dupo.duality import dupo_rewards, mask_choices, oracle_rewards
from stages.dupo.expectations import rl_log_suite
from stages.dupo.io import read_tables, split
from stages.dupo.model import generate, load_model, pack, target_logprobs
from stages.dupo.problems import parse_answer, primal_prompt, unique_given_answer


@dataclass(frozen=True)
class Paths:
    problems: Path = inp("problems table")
    duals: Path = inp("dual questions table")
    sft: Path = inp("SFT model folder")
    models: Path = out("folder: <method>__s<seed>.safetensors and manifest.json")
    rl_log: Path = out("one row per (run, step): reward, oracle accuracy, dual reward, loss, KL, clip fraction")


def run_name(method: str, seed_index: int) -> str:
    """File-safe name of one RL run."""
    return f"{method}__s{seed_index}"


@dataclass
class Pool:
    """The RL problems (no answer is read unless the reward is the oracle's) and the numbers each may hide."""

    problems: pd.DataFrame
    masked: dict[tuple[int, int], str]
    hidden: dict[tuple[int, int], int]
    chains: dict[int, tuple[tuple[str, ...], tuple[int, ...]]]
    unfiltered: dict[int, list[int]]
    domains: Domains
    _eligible: dict[tuple[int, int], list[int]] = field(default_factory=dict)

    def eligible(self, pid: int, answer: int) -> list[int]:
        """The numbers of problem ``pid`` that ``answer`` determines uniquely (cached per problem and answer)."""
        key = (pid, answer)
        if key not in self._eligible:
            self._eligible[key] = unique_given_answer(*self.chains[pid], answer, self.domains)
        return self._eligible[key]

    def choose(self, pid: int, answer: int | None, pick: int, use_filter: bool) -> tuple[int, int] | None:
        """The (problem, number) a rollout's dual hides: the ``pick``-th candidate; None if there is none."""
        candidates = self.unfiltered[pid] if not use_filter else [] if answer is None else self.eligible(pid, answer)
        return (pid, candidates[pick % len(candidates)]) if candidates else None


def build_pool(problems: pd.DataFrame, duals: pd.DataFrame, domains: Domains) -> Pool:
    """Every RL-split problem (the same prompts for every reward) and the numbers each may hide."""
    rl, rl_duals = split(problems, "rl"), split(duals, "rl")
    keys = list(zip(rl_duals.problem_id.astype(int), rl_duals.mask_index.astype(int), strict=True))
    chains = {int(p): (tuple(sig.split("-")), tuple(int(x) for x in nums.split(",")))
              for p, sig, nums in zip(rl.problem_id, rl.signature, rl.numbers, strict=True)}
    return Pool(rl, dict(zip(keys, rl_duals.masked_text, strict=True)),
                dict(zip(keys, rl_duals.hidden.astype(int), strict=True)), chains,
                mask_choices(rl_duals, use_filter=False), domains)


def dual_solver(model: TinyGPT, tok: SmallTokenizer, max_new: int) -> Any:
    """The dual task answered greedily by ``model`` (the same network as the policy, DuPO's single model)."""
    def solve(questions: list[str]) -> list[str]:
        was_training = model.training
        model.eval()
        outs = generate(model, tok, questions, max_new, 0.0)
        model.train(was_training)
        return outs
    return solve


def train_one(policy: TinyGPT, tok: SmallTokenizer, pool: Pool, method: str, cfg: RLConfig, seed: int,
              desc: str, progress_bar: bool = True) -> list[dict[str, float]]:
    """One GRPO run in place on ``policy``; the per-step log."""
    prompt_gen = torch.Generator().manual_seed(seed)   # prompts and hidden numbers: the same for every reward
    rollout_gen = torch.Generator().manual_seed(seed + 1)
    coin_gen = torch.Generator().manual_seed(seed + 2)   # the random reward's coin, apart from the rollouts
    torch.manual_seed(seed)
    reference = copy.deepcopy(policy).requires_grad_(False).eval()
    solve = dual_solver(reference if cfg.dual_solver == "frozen_sft" else policy, tok, cfg.max_new)
    cache: dict[str, str] | None = {} if cfg.dual_solver == "frozen_sft" else None  # a frozen solver is deterministic
    opt = torch.optim.Adam(policy.parameters(), lr=cfg.lr)
    p, g = cfg.prompts_per_step, cfg.group_size
    log = []
    for step in tqdm(range(1, cfg.steps + 1), desc=desc, unit="step", leave=False, disable=not progress_bar):
        rows = pool.problems.iloc[torch.randint(len(pool.problems), (p,), generator=prompt_gen).tolist()]
        pids = rows.problem_id.astype(int).tolist()
        picks = torch.randint(2**31 - 1, (p,), generator=prompt_gen).tolist()
        prompt_ids = [tok.encode(primal_prompt(t), add_bos=True) for t in rows.text for _ in range(g)]
        policy.eval()
        completions = sample(policy, prompt_ids, min(cfg.max_new, policy.max_len - max(map(len, prompt_ids))),
                             tok.eos_id, tok.pad_id, cfg.temperature, rollout_gen)
        policy.train()
        outputs = [tok.decode(c) for c in completions]
        answers = [int(a) for a in rows.answer for _ in range(g)]
        oracle = oracle_rewards(outputs, answers)
        keys = [pool.choose(pids[j // g], parse_answer(o), picks[j // g], method != "dupo_nofilter")
                for j, o in enumerate(outputs)]
        dual = dupo_rewards(outputs, [None if k is None else pool.masked[k] for k in keys],
                            [0 if k is None else pool.hidden[k] for k in keys], solve, cache)
        coins = torch.randint(2, (len(outputs),), generator=coin_gen).float()
        rewards = coins if method == "random" else torch.tensor(oracle if method == "oracle" else dual,
                                                                 dtype=torch.float32)
        adv = group_relative_advantages(rewards.view(p, g), scale_std=True).view(-1)
        ids, mask = pack(prompt_ids, completions, tok.pad_id)
        tmask = mask[:, 1:]
        with torch.no_grad():
            old = target_logprobs(policy, ids, mask)
            ref = target_logprobs(reference, ids, mask)
        losses, kls, clips = [], [], []
        for _ in range(cfg.inner_updates):
            new = target_logprobs(policy, ids, mask)
            kl_tok = kl_estimate(new - ref, cfg.kl) * tmask
            kl = (kl_tok.sum(1) / tmask.sum(1).clamp_min(1)).mean()
            loss = clipped_token_loss(new - old, adv, tmask, cfg.clip_eps) + cfg.beta * kl
            opt.zero_grad()
            loss.backward()
            torch.nn.utils.clip_grad_norm_(policy.parameters(), cfg.grad_clip)
            opt.step()
            losses.append(float(loss.detach()))
            kls.append(float(kl.detach()))
            clips.append(clip_fraction((new - old).detach(), cfg.clip_eps, tmask))
        log.append({"step": step, "reward": float(rewards.mean()), "oracle_accuracy": float(np.mean(oracle)),
                    "dual_reward": float(np.mean(dual)),
                    "parsed": float(np.mean([parse_answer(o) is not None for o in outputs])),
                    "reward_agreement": float(np.mean([a == b for a, b in zip(oracle, dual, strict=True)])),
                    "length": float(np.mean([len(c) for c in completions])), "loss": float(np.mean(losses)),
                    "kl": float(np.mean(kls)), "clip_fraction": float(np.mean(clips))})
    return log


@dataclass(frozen=True)
class Shared:
    """What every RL run reads: the config, the problem pool, the SFT model and the base seed."""

    cfg: RLConfig
    pool: Pool
    sft: Path
    spec: ModelConfig
    seed: int


def rl_run(job: tuple[str, int], sh: Shared) -> tuple[dict[str, torch.Tensor], list[dict[str, float]]]:
    """One (method, seed index) run from the SFT weights, seeded from the job alone: final weights and log."""
    method, s = job
    policy, tok = load_model(sh.sft, sh.spec)
    log = train_one(policy, tok, sh.pool, method, sh.cfg, derive_seed(sh.seed, PAPER, "rl", s), run_name(method, s),
                    not in_worker())
    return dict(policy.state_dict()), log


def run(cfg: RLConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every (method, seed) over ``threads / max_threads`` processes; final weights and the per-step logs."""
    problems, duals = read_tables(paths)
    pool = build_pool(problems, duals, cfg.domains)
    manifest = read_json(Path(paths.sft) / "manifest.json")
    jobs = [(method, s) for s in range(cfg.n_seeds) for method in cfg.methods]
    shared = Shared(cfg, pool, Path(paths.sft), ModelConfig(**manifest["model"]), ctx.seed)
    results = map_runs(rl_run, jobs, shared, threads=ctx.threads, max_threads=cfg.max_threads,
                       desc="dupo RL runs (method × seed)")
    frames, runs = [], []
    with atomic_dir(paths.models) as folder:
        for (method, s), (state, log) in zip(jobs, results, strict=True):
            name = run_name(method, s)
            save_safetensors(state, folder / f"{name}.safetensors")
            frames.append(pd.DataFrame(log).assign(run=name, method=method, seed_index=s))
            runs.append({"run": name, "method": method, "seed_index": s})
        write_json({"model": manifest["model"], "runs": runs, "n_pool": len(pool.problems),
                    "dual_solver": cfg.dual_solver}, folder / "manifest.json")
    rl_log = pd.concat(frames, ignore_index=True)
    validate_table(rl_log, f"{PAPER}.rl_log", rl_log_suite(len(rl_log)))
    write_parquet(rl_log, paths.rl_log)
    return {"runs": len(runs), "steps": cfg.steps, "n_pool": len(pool.problems)}


main = Step(PAPER, "rl", run, load_rl, Paths)


if __name__ == "__main__":
    main()
