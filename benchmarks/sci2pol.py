"""Sci2Pol throughput (sizes the default profile): LM judge, benchmark items, LoRA steps.

Writes ``reports/bench/sci2pol.json``:
- LM judge seconds per prompt (one forward pass, last position);
- a choice item (all options' log-likelihoods) and an open item (greedy line), seconds each,
  with 1 and 2 threads;
- greedy generation stopped at the end of the first line vs always ``max_new_tokens``;
- a LoRA step (batch 4 of corpus pairs) and generation with the adapters merged vs not.
Needs the prepared assets (``dvc repro assets-manifest``); about two minutes on 2 idle cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import torch

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.assets.loaders import load_causal_lm
from stages.core.io import write_json
from stages.sci2pol.agreement import agreement_set
from stages.sci2pol.config import load_corpus
from stages.sci2pol.corpus import build
from stages.sci2pol.data import make_papers
from stages.sci2pol.finetune import add_lora, greedy_generate, train_lora, training_examples
from stages.sci2pol.funnel import Pair
from stages.sci2pol.judges import LMJudge, lm_option_logliks
from stages.sci2pol.tasks import TASK_BY_NAME, make_items


def _per_call(fn, items) -> float:
    start = time.perf_counter()
    for it in items:
        fn(it)
    return (time.perf_counter() - start) / len(items)


def bench_items(model, tok, threads: int, n: int) -> dict[str, float]:
    """Seconds per choice item and per open item at ``threads`` threads."""
    torch.set_num_threads(threads)
    items = make_items(make_papers("bench", 8, 0), 1, 0)
    choice = [i for i in items if TASK_BY_NAME[i.task].kind == "choice"][:n]
    open_ = [i for i in items if TASK_BY_NAME[i.task].kind == "open"][:n]
    return {f"choice_item_s_{threads}_threads": _per_call(lambda it: lm_option_logliks(model, tok, it.prompt,
                                                                                           it.options), choice),
            f"open_item_s_{threads}_threads": _per_call(lambda it: greedy_generate(model, tok, it.prompt, 40), open_)}


def bench_line_stop(model, tok, n: int) -> dict[str, float]:
    """Greedy generation stopped at the first line's end vs a fixed 40 new tokens."""
    items = [i for i in make_items(make_papers("bench", 8, 0), 1, 0) if TASK_BY_NAME[i.task].kind == "open"][:n]

    def fixed(it):
        enc = tok(it.prompt, return_tensors="pt")
        with torch.inference_mode():
            model.generate(**enc, max_new_tokens=40, min_new_tokens=40, do_sample=False,
                           pad_token_id=tok.eos_token_id)

    stop = _per_call(lambda it: greedy_generate(model, tok, it.prompt, 40), items)
    full = _per_call(fixed, items)
    return {"open_item_s_line_stop": stop, "open_item_s_fixed_40_tokens": full, "line_stop_speedup": full / stop}


def bench_judge(model, tok, n: int) -> dict[str, float]:
    """LM judge seconds per prompt."""
    papers, briefs = agreement_set(2, 0)
    by_id = {p.pid: p for p in papers}
    judge = LMJudge(model, tok, 512)
    briefs = briefs[:n]
    start = time.perf_counter()
    judge.score([by_id[b.pid] for b in briefs], [b.text for b in briefs])
    return {"lm_judge_s_per_prompt": (time.perf_counter() - start) / len(briefs)}


def bench_lora(model_dir: Path, params: Path, steps: int, n: int) -> dict[str, float]:
    """Seconds per LoRA step (batch 4) and per open item with the adapters separate vs merged."""
    model, tok = load_causal_lm(model_dir)
    df, _ = build(load_corpus(params), 0)
    rows = df[df.set == "curated"]
    pairs = [Pair(r.did, r.pid, r.text, bool(r.is_long), r.kind, r.source_pid) for r in rows.itertuples()]
    exs = training_examples(pairs, dict(zip(df.pid, df.paper_text, strict=True)), tok, 256)
    lm = add_lora(model, 8, 16)
    start = time.perf_counter()
    train_lora(lm, exs, steps, 4, 1e-3, 0, tok.eos_token_id)
    step_s = (time.perf_counter() - start) / steps
    items = [i for i in make_items(make_papers("bench", 8, 0), 1, 0) if TASK_BY_NAME[i.task].kind == "open"][:n]
    separate = _per_call(lambda it: greedy_generate(lm, tok, it.prompt, 40), items)
    merged_model = lm.merge_and_unload()
    merged = _per_call(lambda it: greedy_generate(merged_model, tok, it.prompt, 40), items)
    return {"lora_step_s_batch4": step_s, "mean_example_tokens": sum(len(e[0]) for e in exs) / len(exs),
            "open_item_s_lora_separate": separate, "open_item_s_lora_merged": merged}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=Path("models/assets/smollm2-135m"))
    ap.add_argument("--params", type=Path, default=Path("params.yaml"))
    ap.add_argument("--out", type=Path, default=Path("reports/bench/sci2pol.json"))
    ap.add_argument("--n", type=int, default=6, help="items (prompts) per measurement")
    args = ap.parse_args()
    info = machine_info()
    model, tok = load_causal_lm(args.model)
    results: dict[str, float] = {}
    for threads in (1, 2):
        results |= bench_items(model, tok, threads, args.n)
    torch.set_num_threads(2)
    results |= bench_line_stop(model, tok, args.n)
    results |= bench_judge(model, tok, 2 * args.n)
    results |= bench_lora(args.model, args.params, 4, args.n)
    write_json({"machine": info, "results": results}, args.out)
    print(results)


if __name__ == "__main__":
    main()
