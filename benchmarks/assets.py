"""Throughput of the prepared assets, to size the profiles of the papers that use them.

Writes ``reports/bench/assets.json``: load time of SmolLM2 and MiniLM, SmolLM2 scoring
throughput (tokens/s, batched with ``stages.core.lm_scoring``) and MiniLM embedding
throughput (chunks/s of the retrieval index's own chunks). Needs the asset stages run.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.assets.loaders import load_causal_lm, load_corpus, load_retrieval_index, load_sentence_encoder
from stages.core.io import write_json
from stages.core.lm_scoring import score_sequences
from stages.core.seeding import apply_threads


def _timed(fn):
    start = time.perf_counter()
    value = fn()
    return value, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--lm", type=Path, default=Path("models/assets/smollm2-135m"))
    parser.add_argument("--encoder", type=Path, default=Path("models/assets/minilm-l6-v2"))
    parser.add_argument("--corpus", type=Path, default=Path("data/assets/wikipedia"))
    parser.add_argument("--index", type=Path, default=Path("data/assets/wikipedia-index"))
    parser.add_argument("--out", type=Path, default=Path("reports/bench/assets.json"))
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--docs", type=int, default=16)
    args = parser.parse_args()
    apply_threads(args.threads)
    (model, tokenizer), lm_load = _timed(lambda: load_causal_lm(args.lm))
    texts = load_corpus(args.corpus)["text"].head(args.docs).tolist()
    seqs = [tokenizer(t)["input_ids"][:256] for t in texts]
    _, lm_score = _timed(lambda: score_sequences(model, seqs, batch_size=8))
    encoder, enc_load = _timed(lambda: load_sentence_encoder(args.encoder))
    chunks = load_retrieval_index(args.index).chunks["text"].head(256).tolist()
    _, enc_time = _timed(lambda: encoder.encode(chunks, batch_size=64, normalize_embeddings=True))
    write_json({"benchmark": "assets", "threads": args.threads, "machine": machine_info(),
                "smollm2_load_s": lm_load, "smollm2_tokens_scored": sum(len(s) - 1 for s in seqs),
                "smollm2_score_tokens_per_s": sum(len(s) - 1 for s in seqs) / lm_score,
                "minilm_load_s": enc_load, "minilm_chunks_per_s": len(chunks) / enc_time}, args.out)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
