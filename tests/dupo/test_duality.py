"""DuPO's reward and the reranker on made-up outputs, and the checkpoint rule, against hand-computed values."""

import pandas as pd

from stages.dupo.duality import dual_rerank, dupo_rewards, majority_vote, mask_choices, rerank_accuracies
from stages.dupo.report import gain_beyond_fraction
from stages.dupo.sft import choose_checkpoint


def test_dupo_reward_uses_only_the_parsed_answer_and_the_hidden_number():
    asked = []

    def solve(questions):          # a perfect dual for 8 * ? + 1 = answer
        asked.extend(questions)
        return [f"#{(int(q.split('A=')[1][:-1]) - 1) // 8}" for q in questions]

    outputs = ["8*4=32,32+1=33#33", "8*4=32,32+2=34#41", "no answer", "#33"]
    cache: dict[str, str] = {}
    rewards = dupo_rewards(outputs, ["P ?"] * 4, [4] * 4, solve, cache)
    assert rewards == [1.0, 0.0, 0.0, 1.0]
    assert sorted(asked) == ["P ? A=33|", "P ? A=41|"]          # one dual per distinct answer, none if unparseable
    dupo_rewards(outputs, ["P ?"] * 4, [4] * 4, solve, cache)
    assert len(asked) == 2                                       # the frozen solver's answers are cached


def test_mask_choices_with_and_without_filter():
    duals = pd.DataFrame({"problem_id": [0, 0, 0, 1, 1], "mask_index": [0, 1, 2, 0, 1],
                          "passes_filter": [1, 0, 1, 0, 0]})
    assert mask_choices(duals, use_filter=True) == {0: [0, 2]}
    assert mask_choices(duals, use_filter=False) == {0: [0, 1, 2], 1: [0, 1]}


def test_majority_and_dual_rerank_ties_go_to_the_first_seen():
    assert majority_vote([3, 5, 5, 3, None]) == 3
    assert majority_vote([None, None]) is None
    assert dual_rerank([3, 5, 7], {3: 0.0, 5: 1.0, 7: 1.0}) == 5
    assert dual_rerank([None, 3], {}) == 3


def test_rerank_accuracies_by_hand():
    samples = [[1, 2, 2, 2], [4, 3, 3, 9]]     # truths 1 and 9
    scores = [{1: 1.0, 2: 0.0}, {4: 0.0, 3: 0.5, 9: 1.0}]
    acc = rerank_accuracies(samples, scores, [1, 9], [1, 2, 4])
    assert acc["random"] == [0.5, 0.5, 0.5]
    assert acc["majority"] == [0.5, 0.5, 0.0]            # N=4: 2 and 3 win the votes
    assert acc["dual"] == [0.5, 0.5, 1.0]                # N=4: both truths reconstruct best
    assert acc["pass"] == [0.5, 0.5, 1.0]


def test_checkpoint_rule():
    curve = [{"val_primal": 0.1, "val_dual": 0.7}, {"val_primal": 0.3, "val_dual": 0.5},
             {"val_primal": 0.4, "val_dual": 0.65}, {"val_primal": 0.5, "val_dual": 0.9}]
    assert choose_checkpoint(curve, (0.2, 0.7), 0.6) == 2
    assert choose_checkpoint(curve[:2], (0.2, 0.7), 0.6) == 1      # closest: 0.1 dual short vs 0.1 primal short


def test_oracle_fraction_metric():
    assert gain_beyond_fraction([0.10, 0.02], [0.12, 0.10], 0.5) == [0.10 - 0.06, 0.02 - 0.05]


def test_the_label_free_filter_is_judged_on_the_outputs_own_answer():
    from stages.dupo.problems import mask_domain, unique_given_answer

    def domain(op):
        return mask_domain(op, 10, 3, 6)     # start/add: 1..10, mul: 2..3, mod: 2..6

    ops, numbers = ("start", "mul", "mod"), (5, 3, 4)          # 5 * 3 = 15, 15 % 4 = 3 (the label)
    # answer 3: start x → 3x % 4 = 3 for x = 1, 5, 9 (three); mul x → 5x % 4 = 3 only for x = 3;
    # mod x → 15 % x = 3 for x = 4, 6 (two): only the multiplier is determined
    assert unique_given_answer(ops, numbers, 3, domain) == [1]
    # a wrong answer 2: start x = 2, 6, 10 (three); mul x = 2 (5·2 % 4 = 2, unique); mod: none gives 2
    assert unique_given_answer(ops, numbers, 2, domain) == [1]
    # an answer no number reaches: nothing to hide
    assert unique_given_answer(ops, numbers, 5, domain) == []
    assert unique_given_answer(("start", "add"), (2, 3), 5, domain) == [0, 1]     # x + 3 = 5, 2 + x = 5


def test_the_pool_hides_what_the_rollouts_answer_determines_and_reads_no_label():
    from stages.dupo.config import Domains
    from stages.dupo.rl import Pool

    problems = pd.DataFrame({"problem_id": [0], "answer": [-999]})     # a wrong label must change nothing
    pool = Pool(problems, masked={}, hidden={}, chains={0: (("start", "add"), (2, 3))},
                unfiltered={0: [0, 1]}, domains=Domains(max_number=10, max_factor=3, max_divisor=6))
    assert pool.choose(0, 5, pick=3, use_filter=True) == (0, 1)       # both determined: the pick-th of [0, 1]
    assert pool.choose(0, 12, pick=3, use_filter=True) == (0, 1)      # 9 + 3 and 2 + 10: both still unique
    assert pool.choose(0, 50, pick=3, use_filter=True) is None        # out of every domain: no dual, reward 0
    assert pool.choose(0, None, pick=3, use_filter=True) is None      # unparseable
    assert pool.choose(0, 50, pick=2, use_filter=False) == (0, 0)     # without the filter any number is hidden


def test_an_output_without_a_dual_question_gets_zero_reward():
    outputs = ["#33", "#33"]
    rewards = dupo_rewards(outputs, ["P ?", None], [4, 0], lambda qs: ["#4" for _ in qs])
    assert rewards == [1.0, 0.0]


def test_the_filter_alone_scores_a_candidate_by_whether_it_determines_any_number():
    from pathlib import Path

    from stages.dupo.config import load_evaluate
    from stages.dupo.evaluate import reachability_scores

    cfg = load_evaluate(Path(__file__).resolve().parents[2] / "params.yaml")     # domains from dupo.data
    problems = pd.DataFrame({"signature": ["start-add"], "numbers": ["2,3"], "answer": [5]})
    # 5 = x + 3 = 2 + x determines both numbers; 500 is out of every domain; None is unparseable
    assert reachability_scores(problems, [[5, 500, None]], cfg) == [{5: 1.0, 500: 0.0}]
