"""Spec writers behind one interface, as the paper scores language models and agents: a small local language
model (SmolLM2-135M-Instruct from the asset layer, the weak generator) and an HTTP endpoint for stronger models
(off unless ``sysmobench.generate.endpoint`` is set). The prompt has the system's code and interface, never the
reference spec of that system: it is few-shot, showing the code and reference spec of a DIFFERENT system
(:data:`EXAMPLE_OF`) as a worked example, and the local model's reply is started with the module header.
"""

from __future__ import annotations

import inspect
import json
import re
import urllib.request
from typing import Any, Protocol

from stages.sysmobench import implementations
from stages.sysmobench.specs import REFERENCE, System, render

CLASSES = {"spinlock": implementations.SpinLock, "mutex": implementations.WaitQueueMutex,
           "ringbuffer": implementations.RingBuffer, "election": implementations.LeaderElection}
MODULE_TEXT = re.compile(r"-{4,}\s*MODULE.*?={4,}", re.DOTALL)
MODULE_END = "===="  # the end of a TLA+ module: decoding stops there
MODULE_START = re.compile(r"-{4,}\s*MODULE\s+\w+\s*-{4,}")
# the worked example shown for each target: always another system's code and reference spec
EXAMPLE_OF = {"spinlock": "ringbuffer", "mutex": "spinlock", "ringbuffer": "mutex", "election": "mutex"}


def _task(system: System, code: bool = True) -> str:
    ref = REFERENCE[system.name]
    signatures = ", ".join(a.signature() for a in ref.actions if a.name in system.actions)
    constants = ", ".join(f"{k} (e.g. {v})" for k, v in system.constants.items())
    listing = f"\n\nIts code (Python):\n```python\n{inspect.getsource(CLASSES[system.name])}```" if code else ""
    return (f"{system.description}{listing}\n"
            f"Write one module named {system.module}. Declare CONSTANTS {', '.join(system.constants)} and VARIABLES "
            f"{', '.join(system.variables)} (constants e.g. {constants}; 0 marks no owner or an empty slot). Define "
            f"Init, one operator per code action: {signatures}, and Next as their disjunction.")


def spec_prompt(system: System, example: System) -> str:
    """The few-shot task for a spec writer: a different system's description and reference spec as a worked
    example, then this system's description, code and the interface its spec must use (never its reference
    spec)."""
    if example.name == system.name:
        raise ValueError(f"the worked example must be another system than {system.name}")
    return (f"Write TLA+ specifications of small concurrent systems from their code.\n\nExample system. "
            f"{_task(example, code=False)}\n\nAnswer:\n{render(REFERENCE[example.name])}\n"
            f"Now this system. {_task(system)}\nAnswer with the TLA+ module only, one definition per line, "
            f"ending with ====.")


def module_start(system: System) -> str:
    """The line a reply is started with (the model continues the module from its header)."""
    return f"---- MODULE {system.module} ----\n"


def extract_module(text: str) -> str:
    """The TLA+ module in a reply: from its MODULE header to ====; a module cut before its end is closed with
    ====; a reply with no module header is returned whole."""
    found = MODULE_TEXT.search(text)
    if found:
        return found.group(0)
    start = MODULE_START.search(text)
    return text[start.start():].rstrip() + "\n====" if start else text.strip()


class Generator(Protocol):
    """Something that writes a spec from a prompt."""

    name: str

    def write_spec(self, prompt: str, seed: int, start: str = "") -> str:
        """The reply to ``prompt`` (sampling seeded by ``seed``), beginning with ``start`` where the writer can
        be given the reply's beginning."""
        ...


class LocalLM:
    """A causal LM from the asset layer, sampled with its chat template."""

    name = "smollm2-135m"

    def __init__(self, model: Any, tokenizer: Any, max_new_tokens: int, temperature: float) -> None:
        self.model, self.tokenizer = model, tokenizer
        self.max_new_tokens, self.temperature = max_new_tokens, temperature

    def write_spec(self, prompt: str, seed: int, start: str = "") -> str:
        import torch

        text = self.tokenizer.apply_chat_template([{"role": "user", "content": prompt}], tokenize=False,
                                                  add_generation_prompt=True) + start
        enc = self.tokenizer(text, return_tensors="pt")
        torch.manual_seed(seed)
        with torch.inference_mode():
            out = self.model.generate(**enc, max_new_tokens=self.max_new_tokens, do_sample=self.temperature > 0,
                                      temperature=self.temperature if self.temperature > 0 else None, top_p=None,
                                      top_k=None, pad_token_id=self.tokenizer.eos_token_id,
                                      stop_strings=[MODULE_END], tokenizer=self.tokenizer)
        return start + self.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)


class HttpEndpoint:
    """A model behind an HTTP endpoint: POST {"prompt", "seed", "max_tokens"} as JSON, read {"text"} back."""

    name = "http-endpoint"

    def __init__(self, url: str, max_new_tokens: int, timeout_s: float) -> None:
        self.url, self.max_new_tokens, self.timeout_s = url, max_new_tokens, timeout_s

    def write_spec(self, prompt: str, seed: int, start: str = "") -> str:
        body = json.dumps({"prompt": prompt, "seed": seed, "max_tokens": self.max_new_tokens}).encode()
        request = urllib.request.Request(self.url, data=body, headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=self.timeout_s) as reply:
            payload = json.loads(reply.read().decode())
        if not isinstance(payload, dict) or not isinstance(payload.get("text"), str):
            raise ValueError(f"{self.url}: the reply has no string field 'text'")
        return payload["text"]
