"""EntropyLong throughput, as ratios measured in one run (to size the profiles and check the batching choices).

Writes ``reports/bench/entropylong.json``:
- entropy scoring tokens/s of SmolLM2-135M, batched vs one document at a time;
- verification candidates/s, one forward pass per (document, candidate) giving every selected
  position vs one pass per (position, candidate) (the document cut after that position);
- faiss exact-search queries/s vs a brute-force NumPy search on the same embeddings (same hits);
- TinyGPT training step time at the default size (sizes the train step).
Needs the prepared assets (``dvc repro assets-manifest``); keeps to about a minute on 2 idle cores.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.assets.loaders import load_causal_lm, load_corpus, load_retrieval_index
from stages.core.config import load_section
from stages.core.io import write_json
from stages.core.lm_scoring import score_sequences
from stages.core.seeding import apply_threads
from stages.entropylong.config import ConstructConfig, TrainConfig
from stages.entropylong.lm import build_lm
from stages.entropylong.uncertainty import entropies_at_positions


def _timed(fn, repeats: int = 1) -> float:
    start = time.perf_counter()
    for _ in range(repeats):
        fn()
    return (time.perf_counter() - start) / repeats


def bench_entropy(model, docs: list[list[int]]) -> dict[str, float]:
    """Tokens/s of score_sequences, all documents in one batch vs one at a time."""
    n = sum(len(d) for d in docs)
    batched = _timed(lambda: score_sequences(model, docs, batch_size=len(docs)))
    single = _timed(lambda: [score_sequences(model, [d], batch_size=1) for d in docs])
    return {"entropy_tokens_per_s_batched": n / batched, "entropy_tokens_per_s_one_at_a_time": n / single,
            "entropy_batched_speedup": single / batched}


def bench_verification(model, docs: list[list[int]], contexts: list[list[int]], positions: list[int]
                       ) -> dict[str, float]:
    """Candidates/s: one pass per (document, candidate) for all positions vs one pass per (position, candidate)."""
    seqs = [[*c, *d[:max(positions) + 1]] for d in docs for c in contexts]
    pos = [[p + len(c) for p in positions] for _ in docs for c in contexts]
    shared = _timed(lambda: entropies_at_positions(model, seqs, pos, batch_size=8))
    per_seqs = [[*c, *d[:p + 1]] for d in docs for c in contexts for p in positions]
    per_pos = [[p + len(c)] for _ in docs for c in contexts for p in positions]
    separate = _timed(lambda: entropies_at_positions(model, per_seqs, per_pos, batch_size=8))
    a = entropies_at_positions(model, seqs, pos, batch_size=8)
    b = entropies_at_positions(model, per_seqs, per_pos, batch_size=8)
    gap = float(np.max(np.abs(np.concatenate(a) - np.concatenate(b))))
    n = len(seqs)
    return {"verify_candidates_per_s_one_pass_per_doc_candidate": n / shared,
            "verify_candidates_per_s_one_pass_per_position": n / separate,
            "verify_shared_pass_speedup": separate / shared, "verify_max_abs_entropy_gap": gap,
            "verify_positions_per_doc": len(positions)}


def bench_faiss(index, n_queries: int = 256, k: int = 32) -> dict[str, float]:
    """Queries/s of the exact faiss index vs NumPy brute force on its own vectors; share of identical top-k."""
    emb = index.reconstruct_n(0, index.ntotal)
    gen = np.random.default_rng(0)
    q = emb[gen.choice(len(emb), n_queries, replace=False)] + 0.05 * gen.standard_normal((n_queries, emb.shape[1]))
    q = (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)

    def brute() -> np.ndarray:
        scores = q @ emb.T
        top = np.argpartition(-scores, k, axis=1)[:, :k]
        return np.take_along_axis(top, np.argsort(-np.take_along_axis(scores, top, 1), 1), 1)

    t_faiss = _timed(lambda: index.search(q, k), repeats=5)
    t_brute = _timed(brute, repeats=5)
    same = float(np.mean(index.search(q, k)[1][:, 0] == brute()[:, 0]))
    return {"faiss_queries_per_s": n_queries / t_faiss, "numpy_brute_force_queries_per_s": n_queries / t_brute,
            "faiss_speedup_over_numpy": t_brute / t_faiss, "faiss_numpy_same_top1": same, "index_vectors": len(emb)}


def bench_train_step(params: Path) -> dict[str, float]:
    """Milliseconds per AdamW step of the default TinyGPT on default-length sequences."""
    train = load_section(TrainConfig, "entropylong.train", params, profile="default")
    cons = load_section(ConstructConfig, "entropylong.construct", params, profile="default")
    model = build_lm(train.model, cons.vocab_size, 0)
    x = torch.randint(0, cons.vocab_size, (train.batch_size, cons.target_len))
    opt = torch.optim.AdamW(model.parameters(), 1e-3)

    def step() -> None:
        logp = model(x)
        loss = -logp[:, :-1].gather(-1, x[:, 1:, None]).mean()
        opt.zero_grad()
        loss.backward()
        opt.step()

    step()
    ms = 1000 * _timed(step, repeats=10)
    return {"tinygpt_ms_per_step": ms,
            "train_grid_seconds_without_overhead": ms / 1000 * train.trainer.max_steps * train.n_seeds
            * len(train.variants)}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--model", type=Path, default=Path("models/assets/smollm2-135m"))
    parser.add_argument("--corpus", type=Path, default=Path("data/assets/wikipedia"))
    parser.add_argument("--index", type=Path, default=Path("data/assets/wikipedia-index"))
    parser.add_argument("--out", type=Path, default=Path("reports/bench/entropylong.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--docs", type=int, default=8)
    parser.add_argument("--doc-tokens", type=int, default=128)
    args = parser.parse_args()
    apply_threads(args.threads)
    model, tokenizer = load_causal_lm(args.model)
    corpus = load_corpus(args.corpus)
    texts = corpus.assign(n=corpus.text.str.len()).sort_values(["n", "id"], ascending=False).text.tolist()
    docs = [tokenizer(t, add_special_tokens=False)["input_ids"][:args.doc_tokens] for t in texts[:args.docs]]
    contexts = [tokenizer(t, add_special_tokens=False)["input_ids"][:64] for t in texts[args.docs:args.docs + 3]]
    results = bench_entropy(model, docs)
    results |= bench_verification(model, docs[:2], contexts, [40, 80, 120])
    results |= bench_faiss(load_retrieval_index(args.index).index)
    results |= bench_train_step(args.params)
    write_json({"benchmark": "entropylong", "machine": machine_info(),
                "sizes": {"docs": args.docs, "doc_tokens": args.doc_tokens, "verify_docs": 2,
                          "verify_candidates": len(contexts)}, "results": results}, args.out)
    print(results)


if __name__ == "__main__":
    main()
