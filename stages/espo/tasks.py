"""The two verifiable-reward tasks of the miniature: 4×4 Sudoku and 3-number Countdown.

A shared character-level vocabulary encodes prompts and completions; both tasks have a
fixed prompt length P and completion length L, so a batch is one (B, P + L) tensor.
"""

from __future__ import annotations

import itertools
from fractions import Fraction

import numpy as np

PAD, MASK = "_", "?"
SYMBOLS = (PAD, MASK, *"0123456789", "+", "-", "*", "/", "(", ")", ",", "=")
VOCAB = {s: i for i, s in enumerate(SYMBOLS)}
PAD_ID, MASK_ID = VOCAB[PAD], VOCAB[MASK]


def encode(text: str, length: int) -> list[int]:
    """Token ids of ``text`` right-padded with PAD to ``length`` (refuses longer text)."""
    if len(text) > length:
        raise ValueError(f"{text!r} is longer than {length} symbols")
    return [VOCAB[c] for c in text] + [PAD_ID] * (length - len(text))


def decode(ids: list[int] | np.ndarray) -> str:
    """Text of token ids with PAD and MASK dropped."""
    return "".join(SYMBOLS[int(i)] for i in ids if int(i) not in (PAD_ID, MASK_ID))


# ---------------------------------------------------------------- Sudoku 4×4

SUDOKU_CELLS = 16


def sudoku_grids() -> np.ndarray:
    """Every valid 4×4 Sudoku (rows, columns and 2×2 boxes hold 1..4), as (288, 16) ints."""
    rows = list(itertools.permutations(range(1, 5)))
    grids = []
    for r in itertools.product(rows, repeat=4):
        g = np.array(r)
        if all(len(set(g[:, c])) == 4 for c in range(4)) and all(
                len(set(g[br:br + 2, bc:bc + 2].ravel())) == 4 for br in (0, 2) for bc in (0, 2)):
            grids.append(g.ravel())
    return np.array(grids)


def sudoku_solutions(puzzle: np.ndarray, grids: np.ndarray) -> int:
    """How many valid grids agree with the puzzle's givens (0 = blank)."""
    given = puzzle > 0
    return int(((grids[:, given] == puzzle[given]).all(axis=1)).sum())


def make_sudoku_puzzle(solution: np.ndarray, n_blanks: int, grids: np.ndarray, gen: np.random.Generator,
                       max_tries: int = 200) -> np.ndarray:
    """Blank ``n_blanks`` random cells of ``solution`` such that the solution stays unique."""
    for _ in range(max_tries):
        puzzle = solution.copy()
        puzzle[gen.choice(SUDOKU_CELLS, size=n_blanks, replace=False)] = 0
        if sudoku_solutions(puzzle, grids) == 1:
            return puzzle
    raise RuntimeError(f"no unique-solution puzzle with {n_blanks} blanks after {max_tries} tries")


def sudoku_reward(puzzle: str, solution: str, completion: str) -> float:
    """Fraction of the puzzle's blanks that the completion fills with the solution's digit."""
    blanks = [i for i, c in enumerate(puzzle) if c == "0"]
    if not blanks:
        return 1.0
    return sum(i < len(completion) and completion[i] == solution[i] for i in blanks) / len(blanks)


# ---------------------------------------------------------------- Countdown (3 numbers)

OPS = "+-*/"


class _Parser:
    """Recursive descent over ``expr := term (('+'|'-') term)*``, ``term := atom (('*'|'/') atom)*``."""

    def __init__(self, text: str) -> None:
        self.text, self.pos, self.numbers = text, 0, []

    def peek(self) -> str:
        return self.text[self.pos] if self.pos < len(self.text) else ""

    def expr(self) -> Fraction | None:
        value = self.term()
        while self.peek() in ("+", "-") and self.peek():
            op = self.text[self.pos]
            self.pos += 1
            rhs = self.term()
            value = None if value is None or rhs is None else (value + rhs if op == "+" else value - rhs)
        return value

    def term(self) -> Fraction | None:
        value = self.atom()
        while self.peek() in ("*", "/") and self.peek():
            op = self.text[self.pos]
            self.pos += 1
            rhs = self.atom()
            if value is None or rhs is None or (op == "/" and rhs == 0):
                value = None
            else:
                value = value * rhs if op == "*" else value / rhs
        return value

    def atom(self) -> Fraction | None:
        if self.peek() == "(":
            self.pos += 1
            value = self.expr()
            if self.peek() != ")":
                raise ValueError("missing )")
            self.pos += 1
            return value
        start = self.pos
        while self.peek().isdigit():
            self.pos += 1
        if start == self.pos:
            raise ValueError(f"expected a number at {start}")
        self.numbers.append(int(self.text[start:self.pos]))
        return Fraction(int(self.text[start:self.pos]))


def parse_equation(text: str) -> tuple[Fraction | None, list[int]] | None:
    """(exact value or None on division by zero, numbers used) of an arithmetic expression; None if malformed."""
    parser = _Parser(text)
    try:
        value = parser.expr()
    except ValueError:
        return None
    if parser.pos != len(text):
        return None
    return value, parser.numbers


def countdown_reward(numbers: list[int], target: int, completion: str) -> float:
    """1 for an equation using each number exactly once that equals the target, 0.1 if well-formed, else 0."""
    parsed = parse_equation(completion)
    if parsed is None:
        return 0.0
    value, used = parsed
    if sorted(used) == sorted(numbers) and value is not None and value == target:
        return 1.0
    return 0.1


def countdown_solutions(numbers: tuple[int, int, int]) -> dict[int, str]:
    """For each positive integer reachable as (x o y) o z, one such equation (first found)."""
    found: dict[int, str] = {}
    for x, y, z in itertools.permutations(numbers):
        for o1, o2 in itertools.product(OPS, repeat=2):
            text = f"({x}{o1}{y}){o2}{z}"
            value = parse_equation(text)[0]
            if value is not None and value.denominator == 1 and value > 0:
                found.setdefault(int(value), text)
    return found


def countdown_prompt(numbers: list[int], target: int) -> str:
    """The prompt text ``a,b,c=target``."""
    return ",".join(map(str, numbers)) + f"={target}"
