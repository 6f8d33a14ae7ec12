"""Checks shared by the causal-LM asset stages (``smollm2``, ``gemma3``): what a GGUF file holds and a greedy
continuation of the saved copy. Not a step: step modules import it, never each other."""

from __future__ import annotations

import collections
from pathlib import Path
from typing import Any


def gguf_tensor_types(path: Path) -> dict[str, int]:
    """How many tensors of each ggml type the GGUF file holds."""
    from gguf import GGUFReader

    return dict(collections.Counter(t.tensor_type.name for t in GGUFReader(str(path)).tensors))


def greedy_continuation(model: Any, tokenizer: Any, prompt: str, max_new_tokens: int) -> str:
    """The greedy continuation of ``prompt`` (new text only)."""
    import torch

    enc = tokenizer(prompt, return_tensors="pt")
    with torch.inference_mode():
        out_ids = model.generate(**enc, max_new_tokens=max_new_tokens, do_sample=False,
                                 pad_token_id=tokenizer.eos_token_id)
    return tokenizer.decode(out_ids[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


def save_dequantised(gguf_path: Path, dest: Path) -> None:
    """Read the GGUF with transformers (+ ``gguf``), dequantise it to float32, save model and tokenizer in ``dest``."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer, GgufConfig

    tokenizer = AutoTokenizer.from_pretrained(gguf_path.parent, gguf_file=gguf_path.name)
    model = AutoModelForCausalLM.from_pretrained(
        gguf_path.parent, gguf_file=gguf_path.name, dtype=torch.float32,
        quantization_config=GgufConfig(gguf_file=gguf_path.name, dequantize=True))
    model.save_pretrained(dest)
    tokenizer.save_pretrained(dest)


def load_saved(folder: Path) -> tuple[Any, Any]:
    """The saved float32 copy and its tokenizer, loaded exactly as papers load it (checks run on this)."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    model = AutoModelForCausalLM.from_pretrained(folder, dtype=torch.float32, local_files_only=True).eval()
    return model, AutoTokenizer.from_pretrained(folder, local_files_only=True)
