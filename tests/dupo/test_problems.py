"""The generator, its solver, the dual questions and the filter, against hand-computed values."""

import numpy as np
import pytest

from stages.dupo.problems import (
    Problem,
    dual_prompt,
    dual_reward,
    dual_steps,
    evaluate_chain,
    mask_domain,
    oracle_reward,
    parse_answer,
    passes_filter,
    random_problem,
    render,
    solution_steps,
    solution_text,
    solve_masked,
)

BOX = Problem(("start", "add", "fdiv"), (7, 5, 4))        # (7 + 5) // 4 = 3
CHAIN = Problem(("start", "mul", "add"), (8, 4, 1))       # 8 * 4 + 1 = 33


def test_chain_values_by_hand():
    assert evaluate_chain(BOX.ops, BOX.numbers) == 3
    assert evaluate_chain(CHAIN.ops, CHAIN.numbers) == 33
    assert evaluate_chain(("start", "sub"), (3, 5)) is None               # no negative stock
    assert evaluate_chain(("start", "add", "mod"), (7, 5, 5)) == 2
    assert solution_text(solution_steps(CHAIN), 33) == "8*4=32,32+1=33#33"


def test_generator_and_solver_agree():
    gen = np.random.default_rng(0)
    for _ in range(200):
        p = random_problem(gen, int(gen.integers(2, 5)), 10, 3, 6, 0.5)
        answer = evaluate_chain(p.ops, p.numbers)
        assert answer is not None and answer >= 0
        last = solution_steps(p)[-1]
        assert int(last.split("=")[1]) == answer                       # the worked solution ends at the answer
        for i, op in enumerate(p.ops):                                   # the true number always solves its dual
            assert p.numbers[i] in solve_masked(p.ops, p.numbers, i, answer, mask_domain(op, 10, 3, 6))


def test_filter_keeps_unique_and_drops_ambiguous_or_unanswerable():
    # the divisor: 12 // k = 3 only for k = 4 in 2..6 -> unique, kept
    divisor = solve_masked(BOX.ops, BOX.numbers, 2, 3, (2, 6))
    assert divisor == [4] and passes_filter(divisor)
    # the start: (x + 5) // 4 = 3 for x in 7..10 -> ambiguous, dropped
    start = solve_masked(BOX.ops, BOX.numbers, 0, 3, (1, 10))
    assert start == [7, 8, 9, 10] and not passes_filter(start)
    # a stated answer no value reaches -> unanswerable, dropped
    assert solve_masked(BOX.ops, BOX.numbers, 0, 100, (1, 10)) == []
    assert not passes_filter([])
    # without a floor division every number of the chain is determined
    assert solve_masked(CHAIN.ops, CHAIN.numbers, 1, 33, (2, 4)) == [4]


def test_dual_worked_solution_by_hand():
    # hide the factor 4 of 8 * ? + 1 = 33: undo +1, then divide by the known prefix 8
    assert dual_steps(CHAIN, 1, 33) == ["33-1=32", "32/8=4"]
    # hide the start: undo +1 and *4
    assert dual_steps(CHAIN, 0, 33) == ["33-1=32", "32/4=8"]
    # hide the last addend: prefix forward, then subtract
    assert dual_steps(CHAIN, 2, 33) == ["8*4=32", "33-32=1"]
    # a floor division in the suffix cannot be undone: the worked solution stops
    assert dual_steps(BOX, 0, 3) == []


def test_masked_text_and_prompts():
    text = render(CHAIN, (0, 0, 0), "Ann", "pens", 0, masked=1)
    assert "?" in text and "4x" not in text and "8" in text
    assert dual_prompt(text, 33).endswith(" A=33|")


@pytest.mark.parametrize(("output", "parsed"), [("8*4=32,32+1=33#33", 33), ("#7", 7), ("32+1=33", None),
                                                ("#", None), ("#12#13", 13), ("", None)])
def test_parse_answer(output, parsed):
    assert parse_answer(output) == parsed


def test_rewards_on_hand_made_outputs():
    assert dual_reward("33-1=32,32/8=4#4", 4) == 1.0     # right reconstruction
    assert dual_reward("33-1=32,32/8=4#5", 4) == 0.0     # wrong
    assert dual_reward("33-1=32,32/8=", 4) == 0.0        # unparseable
    assert oracle_reward("8*4=32,32+1=33#33", 33) == 1.0
    assert oracle_reward("8*4=32#32", 33) == 0.0
