"""Step ``evaluate``: held-out accuracy of the SFT model and every RL run; best-of-N reranking of SFT samples."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.io import read_json, write_json
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.tokenizer import SmallTokenizer
from stages.core.transformer import TinyGPT
from stages.dupo.config import PAPER, EvaluateConfig, ModelConfig, load_evaluate
from stages.dupo.duality import dual_questions, rerank_accuracies
from stages.dupo.io import read_rl_log, read_tables, split
from stages.dupo.model import TOKENIZER, WEIGHTS, dual_accuracy, generate, load_model, primal_outputs
from stages.dupo.problems import dual_reward, parse_answer, unique_given_answer


@dataclass(frozen=True)
class Paths:
    problems: Path = inp("problems table")
    duals: Path = inp("dual questions table")
    sft: Path = inp("SFT model folder")
    rl_models: Path = inp("RL weights and manifest")
    rl_log: Path = inp("RL training log")
    evaluation: Path = out("accuracies per model and seed, reranking curves, filter share (JSON)")


def held_out(lm: TinyGPT, tok: SmallTokenizer, test: pd.DataFrame, test_duals: pd.DataFrame,
             cfg: EvaluateConfig) -> dict[str, float]:
    """Greedy test accuracy, parse rate and output length of the primal task; dual accuracy given the true answer."""
    outs = primal_outputs(lm, tok, test, cfg.max_new)
    parsed = [parse_answer(o) for o in outs]
    return {"primal_accuracy": float(np.mean([a == t for a, t in zip(parsed, test.answer, strict=True)])),
            "parsed": float(np.mean([a is not None for a in parsed])),
            "length": float(np.mean([len(o) for o in outs])),
            "dual_accuracy": dual_accuracy(lm, tok, test_duals, cfg.max_new)}


def greedy_correct(lm: TinyGPT, tok: SmallTokenizer, problems: pd.DataFrame, max_new: int) -> list[bool]:
    """Per problem: whether the greedy primal answer equals the label (the reranking table's greedy line)."""
    parsed = [parse_answer(o) for o in primal_outputs(lm, tok, problems, max_new)]
    return [a == t for a, t in zip(parsed, problems.answer, strict=True)]


def dual_scores(lm: TinyGPT, tok: SmallTokenizer, problems: pd.DataFrame, samples: list[list[int | None]],
                duals: pd.DataFrame, cfg: EvaluateConfig, cache: dict[str, str]) -> list[dict[int, float]]:
    """Per problem and candidate: the share of the numbers the candidate determines that its dual reconstructs.

    The numbers are chosen by the label-free filter on the candidate itself; a candidate that
    determines no number scores 0 (its duals are unanswerable or ambiguous)."""
    by_problem = {int(p): g.set_index("mask_index") for p, g in duals.groupby("problem_id")}
    wanted = []
    for pid, sig, nums, answers in zip(problems.problem_id.astype(int), problems.signature, problems.numbers,
                                       samples, strict=True):
        chain = (tuple(sig.split("-")), tuple(int(x) for x in nums.split(",")))
        for a in sorted({a for a in answers if a is not None}):
            for i in unique_given_answer(*chain, a, cfg.domains):
                row = by_problem[pid].loc[i]
                wanted.append((pid, a, dual_questions([f"#{a}"], [row.masked_text])[0], int(row.hidden)))
    todo = sorted({q for _, _, q, _ in wanted if q not in cache})
    if todo:
        cache.update(zip(todo, generate(lm, tok, todo, cfg.max_new, 0.0, batch_size=cfg.batch_size), strict=True))
    totals: dict[tuple[int, int], list[float]] = {}
    for pid, a, q, hidden in wanted:
        totals.setdefault((pid, a), []).append(dual_reward(cache[q], hidden))
    return [{a: float(np.mean(totals[(pid, a)])) if (pid, a) in totals else 0.0 for a in {x for x in answers
                                                                                          if x is not None}}
            for pid, answers in zip(problems.problem_id.astype(int), samples, strict=True)]


def rerank(lm: TinyGPT, tok: SmallTokenizer, problems: pd.DataFrame, duals: pd.DataFrame, cfg: EvaluateConfig,
           seed: int, cache: dict[str, str]) -> dict[str, list[float]]:
    """Best-of-N accuracy of dual reranking, majority vote, a random pick and pass@N, on SFT samples."""
    gen = torch.Generator().manual_seed(seed)
    n_max = cfg.rerank_ns[-1]
    repeated = problems.loc[problems.index.repeat(n_max)]
    outs = primal_outputs(lm, tok, repeated, cfg.max_new, cfg.temperature, gen)
    samples = [[parse_answer(o) for o in outs[i * n_max:(i + 1) * n_max]] for i in range(len(problems))]
    scores = dual_scores(lm, tok, problems, samples, duals, cfg, cache)
    truth = problems.answer.astype(int).tolist()
    accuracies = rerank_accuracies(samples, scores, truth, cfg.rerank_ns)
    reachable = rerank_accuracies(samples, reachability_scores(problems, samples, cfg), truth, cfg.rerank_ns)
    return {**accuracies, "reachable": reachable["dual"]}


def reachability_scores(problems: pd.DataFrame, samples: list[list[int | None]],
                        cfg: EvaluateConfig) -> list[dict[int, float]]:
    """The filter alone as a reranker (the control for dual reranking): 1 if a candidate determines any number."""
    out = []
    for sig, nums, answers in zip(problems.signature, problems.numbers, samples, strict=True):
        chain = (tuple(sig.split("-")), tuple(int(x) for x in nums.split(",")))
        out.append({a: float(bool(unique_given_answer(*chain, a, cfg.domains))) for a in answers if a is not None})
    return out


def per_seed_metrics(sft: dict[str, float], runs: pd.DataFrame, reranks: list[dict[str, list[float]]],
                     ns: list[int]) -> dict[str, list[float]]:
    """The verdict's per-seed metrics: RL arms paired by seed, reranking at N = 8, SFT gates (one value per seed)."""
    acc = runs.pivot(index="seed_index", columns="method", values="primal_accuracy").sort_index()
    seeds = len(acc)
    metrics: dict[str, list[float]] = {
        "sft_primal_accuracy_low": [sft["primal_accuracy"]] * seeds,
        "sft_primal_accuracy_high": [sft["primal_accuracy"]] * seeds,
        "sft_dual_accuracy": [sft["dual_accuracy"]] * seeds,
    }
    for method in acc.columns:
        metrics[f"{method}_accuracy"] = acc[method].tolist()
        metrics[f"{method}_minus_sft"] = (acc[method] - sft["primal_accuracy"]).tolist()
    if {"dupo", "dupo_nofilter"} <= set(acc.columns):
        metrics["dupo_minus_nofilter"] = (acc["dupo"] - acc["dupo_nofilter"]).tolist()
    if {"dupo", "random"} <= set(acc.columns):
        metrics["dupo_minus_random"] = (acc["dupo"] - acc["random"]).tolist()
    if 8 in ns:
        k = ns.index(8)
        metrics["dual_minus_majority_at_8"] = [r["dual"][k] - r["majority"][k] for r in reranks]
        metrics["dual_minus_reachable_at_8"] = [r["dual"][k] - r["reachable"][k] for r in reranks]
    return metrics


def run(cfg: EvaluateConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Greedy decoding on the test split for every model; reranking per seed; the filter's share."""
    cap_threads(cfg.max_threads)
    problems, duals = read_tables(paths)
    duals = duals.merge(problems[["problem_id", "answer"]], on="problem_id", how="left", validate="many_to_one")
    test, test_duals = split(problems, "test"), split(duals, "test")
    passing = test_duals[test_duals.passes_filter == 1]
    manifest = read_json(Path(paths.rl_models) / "manifest.json")
    spec = ModelConfig(**read_json(Path(paths.sft) / "manifest.json")["model"])
    sft_lm, tok = load_model(Path(paths.sft), spec)
    sft = held_out(sft_lm, tok, test, passing, cfg)
    rows = []
    for r in tqdm(manifest["runs"], desc="evaluate", unit="run"):
        rl_lm, _ = load_model(Path(paths.rl_models), spec, f"{r['run']}.safetensors", Path(paths.sft) / TOKENIZER)
        rows.append({**r, **held_out(rl_lm, tok, test, passing, cfg)})
    runs = pd.DataFrame(rows)
    seeds = sorted(runs.seed_index.unique().tolist())
    cache: dict[str, str] = {}
    reranks = [rerank(sft_lm, tok, test.head(cfg.n_rerank), test_duals, cfg, derive_seed(ctx.seed, PAPER, "rerank", s),
                      cache) for s in tqdm(seeds, desc="rerank", unit="seed")]
    log = read_rl_log(paths.rl_log)
    per_seed = per_seed_metrics(sft, runs, reranks, cfg.rerank_ns)
    greedy_rerank = float(np.mean(greedy_correct(sft_lm, tok, test.head(cfg.n_rerank), cfg.max_new)))
    write_json({"sft": sft, "runs": rows, "rerank": {"ns": cfg.rerank_ns, "per_seed": reranks,
                                                     "sft_greedy": greedy_rerank}, "per_seed": per_seed,
                "seeds": seeds, "n_test": len(test), "n_rl_split": len(split(problems, "rl")),
                "n_rl_pool": int(manifest["n_pool"]), "n_test_duals": len(passing), "n_rerank": min(cfg.n_rerank,
                                                                                                  len(test)),
                "filter": {"raw_duals": len(duals), "fail_share": float(1 - duals.passes_filter.mean()),
                           "fail_share_by_op": {op: float(1 - g.passes_filter.mean())
                                                for op, g in duals.groupby("op")},
                           "problems_without_passing_dual": float(
                               1 - duals.groupby("problem_id").passes_filter.max().mean())},
                "rl_steps": int(log.step.max()), "weights": WEIGHTS}, paths.evaluation, finite=True)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
