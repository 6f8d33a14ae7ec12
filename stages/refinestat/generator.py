"""Statement-by-statement program generation with a small LM, and the three methods at an equal token budget.

The LM continues a few-shot prompt one line (one statement) at a time with a key/value cache; a line
that violates the method's constraint is resampled on its own (RefineStat §3.1). Budget: every sampled
token counts (resamples and refinements included); each attempt may spend at most ``token_budget``
tokens and submit at most ``max_runs`` programs to the sandbox.

- ``unconstrained``: every line is kept; a program that does not run is replaced by a fresh one.
- ``syntax``: a line that does not parse is resampled; a program that does not run is replaced.
- ``refinestat``: a line that violates a semantic constraint is resampled; a program that does not
  run or is not reliable (fewer than ``min_passing`` of the seven diagnostic checks) has its
  likelihood resampled, then its priors (RefineStat §3.2), for at most ``refine_rounds`` rounds; the
  most reliable runnable version is returned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from stages.refinestat.reliability import reliability_score
from stages.refinestat.semantics import declare, is_likelihood, parses, prefix_violation, semantic_violation
from stages.refinestat.tasks import TASKS, shots

INDENT = "    "


def describe_data(variables: dict[str, str], sizes: dict[str, int]) -> str:
    """The prompt's data line: each variable with its kind and length."""
    return ", ".join(f"{v} ({kind}, {sizes[v]} values)" for v, kind in variables.items())


def block(description: str, variables: dict[str, str], sizes: dict[str, int], program: tuple[str, ...] = ()) -> str:
    """One task in the prompt: its description, data and (for an example) its program."""
    head = f"# Task: {description}\n# Data: {describe_data(variables, sizes)}\nwith pm.Model() as model:\n"
    return head + "".join(f"{INDENT}{line}\n" for line in program)


def build_prompt(task: str, sizes: dict[str, int], n_shots: int) -> str:
    """Few-shot prompt with programs for OTHER data sets only (the task's own expert never appears)."""
    t = TASKS[task]
    parts = [block(d, v, {k: 20 for k in v}, p) for d, v, p in shots(task, n_shots)]
    return "import pymc as pm\n\n" + "\n".join(parts) + "\n" + block(t.description, t.variables, sizes) + INDENT


class LineSampler:
    """Samples one line at a time after the prompt and the accepted lines, reusing the key/value cache."""

    def __init__(self, model: Any, tokenizer: Any, prompt: str) -> None:
        self.model, self.tok = model, tokenizer
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model(ids, use_cache=True)
        self.cache = out.past_key_values
        self.checkpoints: list[tuple[int, torch.Tensor]] = [(ids.shape[1], out.logits[0, -1])]
        self.eos = tokenizer.eos_token_id

    def rewind(self, n_lines: int) -> None:
        """Forget every accepted line after the first ``n_lines``."""
        self.checkpoints = self.checkpoints[:n_lines + 1]
        self._crop(self.checkpoints[-1][0])

    def _crop(self, length: int) -> None:
        """Cut the key/value cache back to its first ``length`` positions."""
        extra = self.cache.get_seq_length() - length
        if extra > 0:
            self.cache.crop(-extra)

    @property
    def n_lines(self) -> int:
        return len(self.checkpoints) - 1

    def sample_line(self, gen: torch.Generator, temperature: float, top_p: float, max_tokens: int,
                    stop_early: Callable[[str], bool] | None = None) -> tuple[str, int]:
        """A line sampled after the accepted text (the cache is left as it was) and the tokens it cost.

        ``stop_early(partial)`` True ends the line at once (a violation already certain from its start)."""
        n, logits = self.checkpoints[-1]
        pieces: list[str] = []
        used = 0
        with torch.no_grad():
            for _ in range(max_tokens):
                token = sample_token(logits, temperature, top_p, gen)
                used += 1
                text = self.tok.decode([token])
                if token == self.eos or "\n" in text:
                    pieces.append(text.split("\n")[0] if token != self.eos else "")
                    break
                pieces.append(text)
                if stop_early is not None and stop_early("".join(pieces)):
                    break
                out = self.model(torch.tensor([[token]]), cache=self.cache, use_cache=True)
                logits = out.logits[0, -1]
        self._crop(n)
        return "".join(pieces).strip(), used

    def accept(self, line: str) -> None:
        """Append an accepted line (and the next line's indentation) to the context."""
        n, _ = self.checkpoints[-1]
        ids = self.tok(line + "\n" + INDENT, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            out = self.model(ids, cache=self.cache, use_cache=True)
        self.checkpoints.append((n + ids.shape[1], out.logits[0, -1]))


def sample_token(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    """Nucleus sampling at a temperature."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p
    sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
    choice = torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen)
    return int(order[choice])


@dataclass
class Budget:
    """Tokens and sandbox runs left in one attempt."""

    tokens: int
    runs: int
    used_tokens: int = 0
    resampled: int = 0
    redrafts: int = 0

    def spend(self, n: int) -> None:
        self.tokens -= n
        self.used_tokens += n


@dataclass
class Settings:
    """What generation needs from the params."""

    temperature: float
    resample_temperature: float
    top_p: float
    max_statements: int
    max_line_tokens: int
    refine_rounds: int
    min_passing: int
    thresholds: Any


def next_line(sampler: LineSampler, gen: torch.Generator, budget: Budget, s: Settings,
              accept: Callable[[str], bool], stop_early: Callable[[str], bool] | None = None) -> str | None:
    """Sample lines until one is accepted by ``accept``; None when the token budget runs out.

    The first draft of an attempt is sampled at ``temperature``; every resample (a rejected line, a replaced
    or refined program) at ``resample_temperature``, in every method, so a resample is not the same line again."""
    tries = 0
    while budget.tokens > 0:
        temperature = s.resample_temperature if tries or budget.redrafts else s.temperature
        line, used = sampler.sample_line(gen, temperature, s.top_p, min(s.max_line_tokens, budget.tokens), stop_early)
        budget.spend(used)
        if accept(line):
            return line
        tries += 1
        budget.resampled += 1
    return None


def draft(sampler: LineSampler, gen: torch.Generator, budget: Budget, s: Settings, method: str, task: str,
          keep: list[str]) -> list[str]:
    """Complete a program after the kept lines: statement by statement under the method's constraint."""
    t = TASKS[task]
    declared = dict(t.variables)
    for line in keep:
        declared = declare(line, declared)
    lines = list(keep)
    while len(lines) < s.max_statements:
        if method == "unconstrained":
            line = next_line(sampler, gen, budget, s, lambda _: True)
        elif method == "syntax":
            line = next_line(sampler, gen, budget, s, lambda x: x == "" or parses(x) is None)
        else:
            line = next_line(sampler, gen, budget, s, lambda x, d=declared: semantic_violation(
                x, d, t.observed, t.variables[t.observed]) is None,
                lambda x, d=declared: prefix_violation(x, d) is not None)
        if line is None or line == "":
            break
        lines.append(line)
        if method == "refinestat":
            declared = declare(line, declared)
            if is_likelihood(line):
                break
        elif "observed" in line:
            break
        sampler.accept(line)
    return lines


def attempt(sampler: LineSampler, gen: torch.Generator, run: Callable[[list[str]], dict[str, Any]],
            method: str, task: str, s: Settings, budget: Budget) -> dict[str, Any]:
    """One attempt of a method: programs and their sandbox runs until it succeeds or the budget is spent."""
    versions: list[dict[str, Any]] = []
    keep: list[str] = []
    rounds = 0
    while budget.tokens > 0 and budget.runs > 0:
        sampler.rewind(len(keep))
        program = draft(sampler, gen, budget, s, method, task, keep)
        if method == "refinestat" and not (program and is_likelihood(program[-1])):
            break  # the budget ran out before a complete program
        budget.runs -= 1
        budget.redrafts += 1
        result = run(program)
        score = reliability_score(result, s.thresholds) if result["outcome"] == "ok" else -1
        versions.append({"program": program, "result": result, "score": score})
        if method != "refinestat":
            if result["outcome"] == "ok":
                break
            keep = []
            continue
        if score >= s.min_passing or rounds >= s.refine_rounds:
            break
        rounds += 1
        # round 1: resample the likelihood; round 2 and later: resample the priors (a fresh program)
        keep = program[:-1] if rounds == 1 else []
    best = max(versions, key=lambda v: v["score"], default=None) if versions else None
    if best is not None and method != "refinestat":
        best = versions[-1]
    return {"versions": versions, "best": best, "tokens": budget.used_tokens, "resampled": budget.resampled,
            "first_runnable": bool(versions) and versions[0]["result"]["outcome"] == "ok"}


def generator_for(seed: int) -> torch.Generator:
    """A torch generator for one attempt's sampling."""
    gen = torch.Generator()
    gen.manual_seed(int(seed % (2**63 - 1)))
    return gen


def first_index_of_max(values: list[float]) -> int:
    """The first index of the largest value (ties go to the earliest attempt)."""
    return int(np.argmax(np.asarray(values, dtype=float)))
