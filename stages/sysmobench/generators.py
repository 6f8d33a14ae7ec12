"""Spec writers behind one interface, as the paper scores language models and agents: a small local language
model (SmolLM2-135M-Instruct from the asset layer, the weak generator) and an HTTP endpoint for stronger models
(off unless ``sysmobench.generate.endpoint`` is set). The prompt has the system's code and interface, never the
reference spec.
"""

from __future__ import annotations

import inspect
import json
import re
import urllib.request
from typing import Any, Protocol

from stages.sysmobench import implementations
from stages.sysmobench.specs import REFERENCE, System

CLASSES = {"spinlock": implementations.SpinLock, "mutex": implementations.WaitQueueMutex,
           "ringbuffer": implementations.RingBuffer}
MODULE_TEXT = re.compile(r"-{4,}\s*MODULE.*?={4,}", re.DOTALL)


def spec_prompt(system: System) -> str:
    """The task for a spec writer: the system's description, its code, and the interface the spec must use."""
    ref = REFERENCE[system.name]
    signatures = ", ".join(a.signature() for a in ref.actions if a.name in system.actions)
    constants = ", ".join(f"{k} (e.g. {v})" for k, v in system.constants.items())
    return (f"Write a TLA+ specification of this system.\n{system.description}\n\n"
            f"Its code (Python):\n```python\n{inspect.getsource(CLASSES[system.name])}```\n\n"
            f"Write one module named {system.module}. Declare CONSTANTS {constants} and VARIABLES "
            f"{', '.join(system.variables)} (0 marks no owner or an empty slot). Define Init, one operator per code "
            f"action: {signatures}, and Next as their disjunction. Answer with the TLA+ module only.")


def extract_module(text: str) -> str:
    """The TLA+ module in a reply (from its MODULE header to ====), else the whole reply."""
    found = MODULE_TEXT.search(text)
    return found.group(0) if found else text.strip()


class Generator(Protocol):
    """Something that writes a spec from a prompt."""

    name: str

    def write_spec(self, prompt: str, seed: int) -> str:
        """The reply to ``prompt`` (sampling seeded by ``seed``)."""
        ...


class LocalLM:
    """A causal LM from the asset layer, sampled with its chat template."""

    name = "smollm2-135m"

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int, temperature: float) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    def write_spec(self, prompt: str, seed: int) -> str:
        import torch

        text = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                  add_generation_prompt=True)
        enc = self.tokenizer(text, return_tensors="pt")
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=self.temperature > 0,
                                      temperature=self.temperature if self.temperature > 0 else None, top_p=None,
                                      top_k=None, pad_token_id=self.tokenizer.eos_token_id)
        return self.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


class HttpEndpoint:
    """A model behind an HTTP endpoint: POST {"prompt", "seed", "max_tokens"} as JSON, read {"text"} back."""

    name = "http-endpoint"

    def __init__(self, url: str, max_new_tokens: int, timeout_s: float) -> None:
        self.url, self.max_new_tokens, self.timeout_s = url, max_new_tokens, timeout_s

    def write_spec(self, prompt: str, seed: int) -> str:
        body = json.dumps({"prompt": prompt, "seed": seed, "max_tokens": self.max_new_tokens}).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
            payload = json.loads(reply.read().decode())
        if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
            raise ValueError(f"{self.url}: the reply has no string field 'text'")
        return payload["text"]
