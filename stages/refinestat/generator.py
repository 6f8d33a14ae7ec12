"""Statement-by-statement program generation with a small LM, and the three methods at an equal token budget.

The LM continues a few-shot prompt one line (one statement) at a time with a key/value cache. The two
constrained methods decode token by token under a mask (RefineStat §3.1): a candidate token is kept only
if the line with it is still a valid prefix for the method's checker (:func:`semantics.check_prefix`), and
a newline (or the end-of-text token) only where the line is a complete statement. A statement that
reaches a dead end (no allowed token, or more than ``max_line_tokens``) is resampled on its own.

Budget (equal for every method): ``token_budget`` generated tokens per attempt, each a sampled token fed
to the LM (resampled statements, replaced and refined programs included; candidates removed by the mask
are never generated and cost nothing), and at most ``max_runs`` programs submitted to the sandbox.

- ``unconstrained``: plain nucleus sampling; a program that does not run is replaced by a fresh one.
- ``syntax``: the mask of the statement form alone (``semantic=False``); a program that does not run is replaced.
- ``refinestat``: the mask of the semantic checker; a program that does not run or is not reliable (fewer
  than ``min_passing`` of the seven diagnostic checks) has its likelihood resampled, then its priors
  (RefineStat §3.2), for at most ``refine_rounds`` rounds; the most reliable runnable version is returned.
"""

from __future__ import annotations

import copy
import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np
import torch

from stages.refinestat.reliability import reliability_score
from stages.refinestat.semantics import Check, Context, check_prefix, declare, task_context
from stages.refinestat.tasks import TASKS, shots

INDENT = "    "
EOS_TEXT = "\x00"  # what the end-of-text token reads as: never part of a statement


def describe_data(variables: dict[str, str], sizes: dict[str, int]) -> str:
    """The prompt's data line: each variable with its kind and length."""
    return ", ".join(f"{v} ({kind}, {sizes[v]} values)" for v, kind in variables.items())


def block(description: str, variables: dict[str, str], sizes: dict[str, int], program: tuple[str, ...] = ()) -> str:
    """One task in the prompt: its description, data and (for an example) its program."""
    head = f"# Task: {description}\n# Data: {describe_data(variables, sizes)}\nwith pm.Model() as model:\n"
    return head + "".join(f"{INDENT}{line}\n" for line in program)


# where the prompt ends inside the first statement's indent: after all of it, after the newline only, or
# after three of its four spaces, where SmolLM2's tokenizer splits an indented line ("\n   " then " name")
PROMPT_ENDS = {"indent": 4, "healed": 3, "newline": 0}


def line_start(prompt_end: str) -> str:
    """The text a generated line starts with: the part of the indent the prompt does not end with."""
    return INDENT[PROMPT_ENDS[prompt_end]:]


def build_prompt(task: str, sizes: dict[str, int], n_shots: int, prompt_end: str = "indent") -> str:
    """Few-shot prompt with programs for OTHER data sets only (the task's own expert never appears), ending
    inside the first statement's indent as ``prompt_end`` says."""
    t = TASKS[task]
    parts = [block(d, v, {k: 20 for k in v}, p) for d, v, p in shots(task, n_shots)]
    prompt = "import pymc as pm\n\n" + "\n".join(parts) + "\n" + block(t.description, t.variables, sizes)
    return prompt + INDENT[:PROMPT_ENDS[prompt_end]]


class TokenSource(Protocol):
    """What generation needs from a language model: next-token logits after the accepted lines and the current
    line, one more token, a fresh line, an accepted line, rewinding to fewer lines, and each token's text."""

    vocab: list[str]
    eos: int

    def logits(self) -> torch.Tensor: ...
    def push(self, token: int) -> None: ...
    def new_line(self) -> None: ...
    def accept(self, line: str) -> None: ...
    def rewind(self, n_lines: int) -> None: ...


class LMSource:
    """A causal LM after a prompt, with a key/value cache checkpointed after every accepted line."""

    def __init__(self, model: Any, tokenizer: Any, prompt: str, prompt_end: str = "indent",
                 vocab: list[str] | None = None) -> None:
        self.model, self.tok = model, tokenizer
        self.after_line = "\n" + INDENT[:PROMPT_ENDS[prompt_end]]
        ids = tokenizer(prompt, return_tensors="pt").input_ids
        with torch.no_grad():
            out = model(ids, use_cache=True, logits_to_keep=1)  # the last position's logits only
        self.cache = out.past_key_values
        # a sliding-window layer (Gemma 3) drops the states that left its window, so its cache cannot be cropped
        # back past them: such a cache is copied at every checkpoint and restored from the copy instead
        self.sliding = any(getattr(layer, "is_sliding", False) for layer in getattr(self.cache, "layers", ()))
        self.saved: list[Any] = [copy.deepcopy(self.cache)] if self.sliding else []
        self.checkpoints: list[tuple[int, torch.Tensor]] = [(ids.shape[1], out.logits[0, -1])]
        self.eos = int(tokenizer.eos_token_id)
        self.vocab = vocab if vocab is not None else token_texts(tokenizer, out.logits.shape[-1])
        self._logits = self.checkpoints[-1][1]

    def _crop(self, length: int) -> None:
        if self.sliding:
            if self.cache.get_seq_length() != length:
                self.cache = copy.deepcopy(self.saved[len(self.checkpoints) - 1])
            return
        extra = self.cache.get_seq_length() - length
        if extra > 0:
            self.cache.crop(-extra)

    def logits(self) -> torch.Tensor:
        return self._logits

    def push(self, token: int) -> None:
        with torch.no_grad():
            self._logits = self.model(torch.tensor([[token]]), cache=self.cache, use_cache=True).logits[0, -1]

    def new_line(self) -> None:
        n, self._logits = self.checkpoints[-1]
        self._crop(n)

    def accept(self, line: str) -> None:
        self.new_line()
        n, _ = self.checkpoints[-1]
        ids = self.tok(line + self.after_line, add_special_tokens=False, return_tensors="pt").input_ids
        with torch.no_grad():
            out = self.model(ids, cache=self.cache, use_cache=True, logits_to_keep=1)
        self.checkpoints.append((n + ids.shape[1], out.logits[0, -1]))
        if self.sliding:
            self.saved.append(copy.deepcopy(self.cache))
        self._logits = self.checkpoints[-1][1]

    def rewind(self, n_lines: int) -> None:
        self.checkpoints = self.checkpoints[:n_lines + 1]
        self.saved = self.saved[:n_lines + 1]
        self.new_line()

    @property
    def n_lines(self) -> int:
        return len(self.checkpoints) - 1


def token_texts(tokenizer: Any, n: int) -> list[str]:
    """Each token id's text (the end-of-text token and ids past the tokenizer read as ``EOS_TEXT``)."""
    texts = [tokenizer.decode([i]) if i < len(tokenizer) else EOS_TEXT for i in range(n)]
    texts[int(tokenizer.eos_token_id)] = EOS_TEXT
    return texts


class ScriptedSource:
    """A scripted generator (the positive control): a character vocabulary; for statement k, its logits rank the
    next character of each scripted candidate line the current line is a prefix of, the first candidate
    highest (a known-invalid statement first, a valid one last); every other character is far below."""

    def __init__(self, script: list[list[str]], top: float = 10.0, step: float = 2.0, floor: float = -10.0) -> None:
        chars = [chr(c) for c in range(32, 127)] + ["\n"]
        self.vocab = [*chars, EOS_TEXT]
        self.eos = len(self.vocab) - 1
        self.index = {c: i for i, c in enumerate(self.vocab)}
        self.script, self.top, self.step, self.floor = script, top, step, floor
        self.lines: list[str] = []
        self.current = ""

    def logits(self) -> torch.Tensor:
        out = torch.full((len(self.vocab),), self.floor)
        k = len(self.lines)
        candidates = self.script[k] if k < len(self.script) else []
        for rank, line in enumerate(candidates):
            if line.startswith(self.current):
                nxt = line[len(self.current)] if len(line) > len(self.current) else "\n"
                out[self.index[nxt]] = max(float(out[self.index[nxt]]), self.top - self.step * rank)
        return out

    def push(self, token: int) -> None:
        self.current += self.vocab[token]

    def new_line(self) -> None:
        self.current = ""

    def accept(self, line: str) -> None:
        self.lines.append(line)
        self.current = ""

    def rewind(self, n_lines: int) -> None:
        self.lines = self.lines[:n_lines]
        self.current = ""


def sample_token(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator) -> int:
    """Nucleus sampling at a temperature."""
    probs = torch.softmax(logits.float() / temperature, dim=-1)
    sorted_p, order = torch.sort(probs, descending=True)
    keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p
    sorted_p = torch.where(keep, sorted_p, torch.zeros_like(sorted_p))
    choice = torch.multinomial(sorted_p / sorted_p.sum(), 1, generator=gen)
    return int(order[choice])


def masked_sample(logits: torch.Tensor, temperature: float, top_p: float, gen: torch.Generator,
                  allowed: Callable[[int], bool], max_checks: int) -> tuple[int | None, list[tuple[int, float]]]:
    """A token from the nucleus with every disallowed token masked out, renormalised (§3.1, constrained decoding);
    if the mask removes the whole nucleus, from the whole tempered distribution with the mask. Sampled lazily:
    draw, and if the token is disallowed, zero its probability and draw again; after ``max_checks`` disallowed
    draws every token is checked in order of probability (until the unchecked ones hold less than 1e-9 of the
    allowed mass) and the allowed ones are sampled by their renormalised probability. Returns the token (None
    only when no token is allowed: a dead end) and the masked draws with their probability."""
    logp = torch.log_softmax(logits.double() / temperature, dim=-1)
    sorted_lp, order = torch.sort(logp, descending=True)
    sorted_p = sorted_lp.exp()
    keep = torch.cumsum(sorted_p, 0) - sorted_p < top_p
    masked: list[tuple[int, float]] = []
    seen: set[int] = set()
    for weights in (torch.where(keep, sorted_p, torch.zeros_like(sorted_p)), sorted_p.clone()):
        for j in seen:
            weights[j] = 0.0
        while len(masked) < max_checks and float(weights.sum()) > 0:
            j = int(torch.multinomial(weights / weights.sum(), 1, generator=gen))
            token = int(order[j])
            if allowed(token):
                return token, [(int(order[i]), p) for i, p in masked]
            masked.append((j, float(sorted_p[j])))
            seen.add(j)
            weights[j] = 0.0
    found: list[int] = []
    found_lp: list[float] = []
    lps, ids = sorted_lp.tolist(), order.tolist()
    n = len(lps)
    acc = 0.0  # sum of exp(lp - found_lp[0]) over the allowed tokens found
    for j in range(n):
        if found and lps[j] + math.log(n - j) < found_lp[0] + math.log(acc) - 20.7:
            break  # the unchecked tokens hold less than 1e-9 of the allowed mass
        if j in seen:
            continue
        if allowed(ids[j]):
            found.append(j)
            found_lp.append(lps[j])
            acc += math.exp(lps[j] - found_lp[0])
    masks = [(int(order[i]), p) for i, p in masked]
    if not found:
        return None, masks
    w = torch.softmax(torch.tensor(found_lp), 0)
    return int(order[found[int(torch.multinomial(w, 1, generator=gen))]]), masks


@dataclass
class Budget:
    """Tokens and sandbox runs left in one attempt, and what was spent."""

    tokens: int
    runs: int
    used_tokens: int = 0
    resampled: int = 0
    redrafts: int = 0
    masked: int = 0

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
    max_checks: int = 64
    prompt_end: str = "indent"
    max_resamples: int = 8


@dataclass
class Trace:
    """The masking and rejection trace of one attempt: every masked draw, dead end and resampled statement."""

    events: list[dict[str, Any]] = field(default_factory=list)
    limit: int = 400

    def add(self, **event: Any) -> None:
        if len(self.events) < self.limit:
            self.events.append(event)


def allows(checker: Callable[[str], Check], text: str, piece: str) -> bool:
    """Whether ``piece`` may follow ``text``: a newline or the end of text only after a complete statement, any
    other piece while the line stays a valid prefix."""
    if piece == EOS_TEXT or "\n" in piece:
        head = "" if piece == EOS_TEXT else piece.split("\n")[0]
        return "\ufffd" not in head and checker(text + head).status == "complete"
    return "\ufffd" not in piece and checker(text + piece).status != "dead"


class PositionMask:
    """``allows(checker, text, piece)`` at one position of a line, each distinct prefix of a piece checked once.

    Exact for a prefix checker (§3.1's constraint check): a line that cannot become a valid statement stays so
    whatever follows, so a piece is disallowed as soon as one of its prefixes is; the pieces drawn or scanned at one
    position share most of their first characters, so most are settled from the memo without parsing the line."""

    def __init__(self, checker: Callable[[str], Check], text: str) -> None:
        self.checker, self.text = checker, text
        self.dead: dict[str, bool] = {}
        self.calls = 0

    def _dead(self, prefix: str) -> bool:
        known = self.dead.get(prefix)
        if known is None:
            self.calls += 1
            known = self.dead[prefix] = self.checker(self.text + prefix).status == "dead"
        return known

    def __call__(self, piece: str) -> bool:
        if piece == EOS_TEXT or "\n" in piece:
            return allows(self.checker, self.text, piece)
        if "\ufffd" in piece:
            return False
        return not any(self._dead(piece[:k]) for k in range(min(1, len(piece)), len(piece) + 1))


def sample_statement(src: TokenSource, gen: torch.Generator, budget: Budget, s: Settings, temperature: float,
                     checker: Callable[[str], Check] | None, trace: Trace, statement: int
                     ) -> tuple[str | None, bool]:
    """One line after the accepted ones, and whether it ended the text (end-of-text token).

    With a checker, token by token under its mask; None at a dead end (no allowed token, the line longer than
    ``max_line_tokens``) or when the budget runs out. Without one, plain sampling until a newline."""
    src.new_line()
    text = ""
    for _ in range(s.max_line_tokens):
        if budget.tokens <= 0:
            return None, False
        if checker is None:
            token = sample_token(src.logits(), temperature, s.top_p, gen)
        else:
            mask = PositionMask(checker, text)
            token, masked = masked_sample(src.logits(), temperature, s.top_p, gen,
                                          lambda t, mask=mask: mask(src.vocab[t]), s.max_checks)
            budget.masked += len(masked)
            for t, p in masked:
                piece = src.vocab[t]
                why = (checker(text + piece).reason if piece != EOS_TEXT and "\n" not in piece
                       else "form: the line ends before the statement is complete")
                trace.add(statement=statement, event="masked", prefix=text, token=piece, prob=p, reason=why or "")
            if token is None:
                trace.add(statement=statement, event="dead_end", prefix=text, token="", prob=0.0,
                          reason="no allowed token")
                return None, False
        budget.spend(1)
        piece = src.vocab[token]
        if piece == EOS_TEXT or "\n" in piece:
            return text + ("" if piece == EOS_TEXT else piece.split("\n")[0]), piece == EOS_TEXT
        text += piece
        src.push(token)
    if checker is not None:
        trace.add(statement=statement, event="dead_end", prefix=text, token="", prob=0.0,
                  reason=f"longer than {s.max_line_tokens} tokens")
        return None, False
    return text, False


def checker_for(method: str, ctx: Context) -> Callable[[str], Check] | None:
    """The method's mask: the semantic checker (RefineStat), the statement form alone (syntax), none."""
    if method == "unconstrained":
        return None
    return lambda text: check_prefix(text, ctx)


def draft(src: TokenSource, gen: torch.Generator, budget: Budget, s: Settings, method: str, task: str,
          keep: list[str], trace: Trace) -> tuple[list[str], bool]:
    """Complete a program after the kept lines, statement by statement under the method's mask; the program and
    whether it is complete (a likelihood, the end of the text, or ``max_statements`` statements)."""
    t = TASKS[task]
    indent = line_start(s.prompt_end)
    base = task_context(t.variables, t.observed, semantic=method == "refinestat", indent=indent)
    declared = dict(t.variables)
    free = False
    for line in keep:
        check = check_prefix(indent + line, Context(**{**base.__dict__, "declared": declared}))
        if check.status == "complete":
            declared, free = declare(check, declared), free or check.func != "Deterministic"
    lines = list(keep)
    while len(lines) < s.max_statements:
        last = len(lines) == s.max_statements - 1
        ctx = Context(**{**base.__dict__, "declared": declared, "require_likelihood": last and method == "refinestat",
                         "has_free": free})
        checker = checker_for(method, ctx)
        tries = 0
        while True:
            temperature = s.resample_temperature if tries or budget.redrafts else s.temperature
            line, ended = sample_statement(src, gen, budget, s, temperature, checker, trace, len(lines))
            if line is not None or budget.tokens <= 0 or tries >= s.max_resamples:
                break
            tries += 1
            budget.resampled += 1
            trace.add(statement=len(lines), event="resampled", prefix="", token="", prob=0.0, reason="")
        if line is None:
            return lines, False
        stripped = line.strip()
        if checker is None:
            if stripped:
                lines.append(stripped)
            if ended or not stripped or "observed" in stripped:
                return lines, True
            src.accept(line if line.strip() == stripped and line.startswith(line_start(s.prompt_end)) else
                       line_start(s.prompt_end) + stripped)
            continue
        check = checker(line)
        lines.append(stripped)
        if method == "refinestat":
            declared, free = declare(check, declared), free or check.func != "Deterministic"
        if check.likelihood:
            return lines, True
        src.accept(line)
    return lines, True


def attempt(src: TokenSource, gen: torch.Generator, run: Callable[[list[str]], dict[str, Any]],
            method: str, task: str, s: Settings, budget: Budget, trace: Trace | None = None) -> dict[str, Any]:
    """One attempt of a method: programs and their sandbox runs until it succeeds or the budget is spent."""
    trace = trace if trace is not None else Trace()
    versions: list[dict[str, Any]] = []
    keep: list[str] = []
    rounds = 0
    first_program_tokens = -1  # tokens spent when the first complete program was submitted (-1: none)
    while budget.tokens > 0 and budget.runs > 0:
        src.rewind(len(keep))
        program, complete = draft(src, gen, budget, s, method, task, keep, trace)
        if not complete:
            break  # the budget ran out inside a program: nothing to submit
        budget.runs -= 1
        budget.redrafts += 1
        if first_program_tokens < 0:
            first_program_tokens = budget.used_tokens
        result = run(program)
        score = reliability_score(result, s.thresholds) if result["outcome"] == "ok" else -1
        versions.append({"program": program, "result": result, "score": score})
        trace.add(statement=-1, event="sandbox", prefix="", token="", prob=0.0,
                  reason=f"{result['outcome']}: {str(result.get('error') or '')[:160]}")
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
            "masked": budget.masked, "trace": trace.events, "first_program_tokens": first_program_tokens,
            "first_runnable": bool(versions) and versions[0]["result"]["outcome"] == "ok"}


def generator_for(seed: int) -> torch.Generator:
    """A torch generator for one attempt's sampling."""
    gen = torch.Generator()
    gen.manual_seed(int(seed % (2**63 - 1)))
    return gen


def first_index_of_max(values: list[float]) -> int:
    """The first index of the largest value (ties go to the earliest attempt)."""
    return int(np.argmax(np.asarray(values, dtype=float)))
