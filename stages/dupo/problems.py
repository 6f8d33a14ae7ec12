"""Arithmetic word problems from expression chains, their solutions, and DuPO's dual questions.

A problem is a chain ``v0 ∘1 x1 ∘2 x2 … ∘k xk``: a start number and 2-4 operations (add, sub,
mul, and as the last operation optionally a floor division ``fdiv`` or a remainder ``mod``),
rendered in templated English. The primal task asks for the final value, with a worked
solution (one ``a∘b=c`` step per operation, then ``#answer``).

DuPO's dual task (paper §3.1, the "complementary dual"): split the input into a known part and
an unknown part — here one number of the problem, replaced by ``?`` — and, given the primal
answer, reconstruct the unknown number. The filter (paper §3.2) keeps only dual questions that
are answerable with a unique answer: the number is solved for symbolically over its domain and
the dual is dropped when zero or several values give the stated answer (floor division and
remainders make many of them ambiguous).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

OPS = ("start", "add", "sub", "mul", "fdiv", "mod")
FINAL_ONLY = ("fdiv", "mod")
SYMBOL = {"add": "+", "sub": "-", "mul": "*", "fdiv": "/", "mod": "%"}
NAMES = ("Ann", "Ben", "Cal", "Dee", "Eve", "Fay")
ITEMS = ("pens", "cups", "eggs", "nuts")
TEMPLATES: dict[str, tuple[str, ...]] = {
    "start": ("{name} has {x} {item}.", "{name} owns {x} {item}.", "{name} got {x} {item}."),
    "add": ("Buys {x}.", "Finds {x}.", "Gets {x} more."),
    "sub": ("Loses {x}.", "Sells {x}.", "Gives {x} away."),
    "mul": ("Has {x}x as many.", "Stock grows {x}x."),
    "fdiv": ("Full boxes of {x}?", "How many full bags of {x}?"),
    "mod": ("Left after boxes of {x}?", "Rest after bags of {x}?"),
}
QUESTIONS = ("How many?", "Total {item}?")
MASK = "?"
ANSWER_MARK = "#"
_NUMBER = re.compile(r"\d+")
_FINAL = re.compile(r"#(-?\d+)$")


@dataclass(frozen=True)
class Problem:
    """One expression chain: operation names (the first is ``start``) and their numbers."""

    ops: tuple[str, ...]
    numbers: tuple[int, ...]

    @property
    def signature(self) -> str:
        """The expression template: the operations in order."""
        return "-".join(self.ops)

    @property
    def key(self) -> str:
        """The expression (template and numbers): splits never share one."""
        return f"{self.signature}:{','.join(map(str, self.numbers))}"


def apply_op(op: str, value: int, x: int) -> int | None:
    """One operation of the chain; None where it is undefined (negative stock, division by zero)."""
    if op == "start":
        return x
    if op == "add":
        return value + x
    if op == "sub":
        return value - x if value >= x else None
    if op == "mul":
        return value * x
    if x <= 0:
        return None
    return value // x if op == "fdiv" else value % x


def evaluate_chain(ops: tuple[str, ...], numbers: tuple[int, ...]) -> int | None:
    """The final value of a chain (the primal answer); None if some step is undefined."""
    value = 0
    for op, x in zip(ops, numbers, strict=True):
        step = apply_op(op, value, x)
        if step is None:
            return None
        value = step
    return value


def solution_steps(problem: Problem) -> list[str]:
    """The worked primal solution: one ``a∘b=c`` step per operation after the start."""
    value, steps = problem.numbers[0], []
    for op, x in zip(problem.ops[1:], problem.numbers[1:], strict=True):
        nxt = apply_op(op, value, x)
        steps.append(f"{value}{SYMBOL[op]}{x}={nxt}")
        value = nxt
    return steps


def solution_text(steps: list[str], answer: int) -> str:
    """``step,step,…#answer``: the target text of either task."""
    return ",".join(steps) + f"{ANSWER_MARK}{answer}"


def render(problem: Problem, template_ids: tuple[int, ...], name: str, item: str, question_id: int,
           masked: int | None = None) -> str:
    """The problem in English; number ``masked`` (an index into the chain) written as ``?``."""
    parts = []
    for i, (op, x, t) in enumerate(zip(problem.ops, problem.numbers, template_ids, strict=True)):
        shown = MASK if i == masked else str(x)
        parts.append(TEMPLATES[op][t % len(TEMPLATES[op])].format(name=name, item=item, x=shown))
    if problem.ops[-1] not in FINAL_ONLY:
        parts.append(QUESTIONS[question_id % len(QUESTIONS)].format(item=item))
    return " ".join(parts)


def random_problem(gen: np.random.Generator, n_ops: int, max_number: int, max_factor: int, max_divisor: int,
                   p_final_box: float) -> Problem:
    """A chain with ``n_ops`` operations after the start whose every step is defined (rejection sampling)."""
    while True:
        ops = ["start"] + [str(gen.choice(["add", "sub", "mul"])) for _ in range(n_ops)]
        if gen.random() < p_final_box:
            ops[-1] = str(gen.choice(FINAL_ONLY))
        numbers = []
        for op in ops:
            if op == "mul":
                numbers.append(int(gen.integers(2, max_factor + 1)))
            elif op in FINAL_ONLY:
                numbers.append(int(gen.integers(2, max_divisor + 1)))
            else:
                numbers.append(int(gen.integers(1, max_number + 1)))
        problem = Problem(tuple(ops), tuple(numbers))
        if evaluate_chain(problem.ops, problem.numbers) is not None:
            return problem


def solve_masked(ops: tuple[str, ...], numbers: tuple[int, ...], index: int, answer: int,
                 domain: tuple[int, int]) -> list[int]:
    """Every value of number ``index`` in ``domain`` (inclusive) that gives ``answer`` (DuPO §3.2's solvability)."""
    lo, hi = domain
    found = []
    for x in range(lo, hi + 1):
        trial = (*numbers[:index], x, *numbers[index + 1:])
        if evaluate_chain(ops, trial) == answer:
            found.append(x)
    return found


def passes_filter(solutions: list[int]) -> bool:
    """The answerable-and-unique filter: exactly one value reconstructs the stated answer."""
    return len(solutions) == 1


def unique_given_answer(ops: tuple[str, ...], numbers: tuple[int, ...], answer: int,
                        domain: Callable[[str], tuple[int, int]]) -> list[int]:
    """The label-free filter (DuPO §3.2, judged from the question and an output): the numbers ``answer`` pins down."""
    return [i for i, op in enumerate(ops) if passes_filter(solve_masked(ops, numbers, i, answer, domain(op)))]


def mask_domain(op: str, max_number: int, max_factor: int, max_divisor: int) -> tuple[int, int]:
    """The values a masked number of this operation can take (what the problem family allows)."""
    if op == "mul":
        return 2, max_factor
    if op in FINAL_ONLY:
        return 2, max_divisor
    return 1, max_number


def dual_steps(problem: Problem, index: int, answer: int) -> list[str]:
    """The worked dual solution: the known prefix forward, the suffix undone from the answer, then the unknown.

    A floor division or remainder cannot be undone by one step; the worked solution then stops there
    (the unknown follows by search, as for a masked divisor).
    """
    ops, nums = problem.ops, problem.numbers
    steps, prefix = [], 0
    for i in range(index):
        nxt = apply_op(ops[i], prefix, nums[i])
        if i > 0:
            steps.append(f"{prefix}{SYMBOL[ops[i]]}{nums[i]}={nxt}")
        prefix = nxt
    target = answer
    for j in range(len(ops) - 1, index, -1):
        op, x = ops[j], nums[j]
        if op == "add":
            steps.append(f"{target}-{x}={target - x}")
            target -= x
        elif op == "sub":
            steps.append(f"{target}+{x}={target + x}")
            target += x
        elif op == "mul" and target % x == 0:
            steps.append(f"{target}/{x}={target // x}")
            target //= x
        else:
            return steps
    op = ops[index]
    if op == "add":
        steps.append(f"{target}-{prefix}={target - prefix}")
    elif op == "sub":
        steps.append(f"{prefix}-{target}={prefix - target}")
    elif op == "mul" and prefix and target % prefix == 0:
        steps.append(f"{target}/{prefix}={target // prefix}")
    return steps


def primal_prompt(text: str) -> str:
    """What the model reads for the primal task."""
    return f"{text}|"


def dual_prompt(masked_text: str, answer: int | str) -> str:
    """What the model reads for the dual task: the problem with one number hidden, and an answer."""
    return f"{masked_text} A={answer}|"


def parse_answer(output: str) -> int | None:
    """The final ``#number`` of a generated solution; None if there is none (unparseable output)."""
    match = _FINAL.search(output.strip())
    return int(match.group(1)) if match else None


def oracle_reward(output: str, answer: int) -> float:
    """RLVR's reward (needs the label): 1 if the parsed final answer is right."""
    return float(parse_answer(output) == answer)


def dual_reward(dual_output: str, hidden: int) -> float:
    """DuPO's self-supervised reward (§3.1): 1 if the dual reconstruction equals the hidden number."""
    return float(parse_answer(dual_output) == hidden)


def numbers_in(text: str) -> list[int]:
    """The numbers written in a problem text, in order."""
    return [int(m) for m in _NUMBER.findall(text)]
