"""ESPO's estimators, objectives, tasks and rewards against exact or hand-computed values."""

import itertools

import numpy as np
import pytest
import torch

from stages.espo.config import CountdownData, SudokuData
from stages.espo.data import build_countdown, build_sudoku
from stages.espo.diffusion import MaskedDiffusionLM, sample
from stages.espo.elbo import (
    elbo_exact,
    elbo_mask_samples,
    elbo_token_terms,
    espo_loss,
    random_masks,
    stratified_mask_counts,
    token_level_loss,
)
from stages.espo.tasks import (
    MASK_ID,
    countdown_reward,
    decode,
    encode,
    parse_equation,
    sudoku_grids,
    sudoku_reward,
    sudoku_solutions,
)

L = 4


@pytest.fixture(scope="module")
def tiny():
    torch.manual_seed(0)
    model = MaskedDiffusionLM(d_model=16, n_layers=1, n_heads=2, max_len=3 + L).eval()
    prompt = torch.tensor([[3, 5, 7]])
    completion = torch.tensor([[4, 9, 2, 6]])
    return model, prompt, completion


def _all_masks():
    """Every (l, subset) with its probability under l ~ U{0..L}, subset uniform of size l."""
    for l_count in range(L + 1):
        subsets = list(itertools.combinations(range(L), l_count))
        for subset in subsets:
            m = torch.zeros(1, L, dtype=torch.bool)
            m[0, list(subset)] = True
            yield m, 1.0 / (L + 1) / len(subsets)


def test_elbo_estimator_is_unbiased_by_exact_enumeration(tiny):
    model, prompt, completion = tiny
    with torch.no_grad():
        single = sum(p * elbo_token_terms(model, prompt, completion, m[None]).sum().item() for m, p in _all_masks())
        paired = sum(p * elbo_token_terms(model, prompt, completion, torch.stack([m, ~m])).sum().item()
                     for m, p in _all_masks())
    exact = elbo_exact(model, prompt, completion).item()
    assert single == pytest.approx(exact, rel=1e-5)
    assert paired == pytest.approx(exact, rel=1e-5)
    assert exact < 0


def test_complementary_mask_has_lower_variance_than_two_independent_masks(tiny):
    model, prompt, completion = tiny
    with torch.no_grad():
        single = [(p, elbo_token_terms(model, prompt, completion, m[None]).sum().item()) for m, p in _all_masks()]
        paired = [(p, elbo_token_terms(model, prompt, completion, torch.stack([m, ~m])).sum().item())
                  for m, p in _all_masks()]

    def var(pairs):
        mean = sum(p * v for p, v in pairs)
        return sum(p * (v - mean) ** 2 for p, v in pairs)

    two_independent = var(single) / 2   # same cost: two forward passes
    assert var(paired) < two_independent


def test_sampled_masks_have_the_right_counts_and_are_stratified():
    gen = torch.Generator().manual_seed(0)
    counts = stratified_mask_counts(11, 10, gen)
    assert sorted(counts.tolist()) == list(range(11))   # B = L + 1: one draw per stratum
    masks = random_masks(counts, 10, gen)
    assert masks.sum(1).tolist() == counts.tolist()
    s = elbo_mask_samples(5, 10, 2, True, gen)
    assert s.shape == (4, 5, 10) and torch.equal(s[1], ~s[0]) and torch.equal(s[3], ~s[2])


def test_mask_count_marginal_is_uniform():
    gen = torch.Generator().manual_seed(1)
    counts = torch.cat([stratified_mask_counts(7, 4, gen) for _ in range(3000)])
    freq = torch.bincount(counts, minlength=5).double() / len(counts)
    assert torch.allclose(freq, torch.full((5,), 0.2, dtype=torch.float64), atol=0.01)


def test_espo_ratio_is_one_when_theta_equals_old(tiny):
    model, prompt, completion = tiny
    masks = elbo_mask_samples(1, L, 2, True, torch.Generator().manual_seed(0))
    new = elbo_token_terms(model, prompt, completion, masks).sum(1)
    old = elbo_token_terms(model, prompt, completion, masks).sum(1).detach()
    adv = torch.tensor([0.7])
    # ρ = 1 and δ_ref = 0 → the loss is −mean(A), with or without 1/L
    assert espo_loss(new, old, old, adv, L, 0.2, 0.01, "k2").item() == pytest.approx(-0.7)
    assert espo_loss(new, old, old, adv, L, 0.2, 0.01, "k2", per_token_ratio=False).item() == pytest.approx(-0.7)


def test_espo_loss_hand_computed():
    new, old, ref = torch.tensor([-10.0, -8.0]), torch.tensor([-12.0, -8.0]), torch.tensor([-11.0, -6.0])
    adv = torch.tensor([1.0, -1.0])
    # ρ = exp(2/4) = 1.6487 → clipped to 1.2 for A > 0; ρ = 1 for the second; k2: (1² + 2²)/2 / (2·4)
    expected = -(1.2 - 1.0) / 2 + 0.01 * (0.5 + 2.0) / 8
    assert espo_loss(new, old, ref, adv, 4, 0.2, 0.01, "k2").item() == pytest.approx(expected, rel=1e-6)
    # k1: δ sum = 1 − 2 = −1; k3: e^-1 − 1 + 1 + e^2 − 1 − 2
    assert espo_loss(new, old, ref, adv, 4, 0.2, 0.01, "k1").item() == pytest.approx(-0.1 + 0.01 * (-1) / 8)
    k3 = np.exp(-1) + np.exp(2) - 3
    assert espo_loss(new, old, ref, adv, 4, 0.2, 0.01, "k3").item() == pytest.approx(-0.1 + 0.01 * k3 / 8, rel=1e-6)


def test_token_level_loss_hand_computed():
    new = torch.tensor([[0.0, np.log(1.5)]])
    old = torch.zeros(1, 2)
    ref = torch.tensor([[0.0, 0.0]])
    mask = torch.tensor([[True, True]])
    # tokens: ρ = 1 → 1·A, ρ = 1.5 → clipped 1.2·A; KL k2 mean: (0 + log(1.5)²/2)/2
    expected = -(1.0 + 1.2) / 2 + 0.01 * (np.log(1.5) ** 2 / 2) / 2
    assert token_level_loss(new, old, ref, torch.tensor([1.0]), mask, 0.2, 0.01, "k2").item() == pytest.approx(
        expected, rel=1e-6)


def test_sampler_fills_every_masked_position():
    torch.manual_seed(0)
    model = MaskedDiffusionLM(16, 1, 2, 12).eval()
    out = sample(model, torch.randint(2, 12, (3, 4)), 8, 3, 1.0, torch.Generator().manual_seed(0))
    assert out.shape == (3, 8) and not (out == MASK_ID).any()


def test_sudoku_has_exactly_288_valid_grids():
    grids = sudoku_grids()
    assert grids.shape == (288, 16) and len({tuple(g) for g in grids}) == 288
    for g in grids.reshape(-1, 4, 4):
        assert all(sorted(r) == [1, 2, 3, 4] for r in (*g, *g.T))
    assert sudoku_solutions(grids[0], grids) == 1
    assert sudoku_solutions(np.zeros(16, dtype=int), grids) == 288


def test_sudoku_split_shares_no_solution_grid():
    cfg = SudokuData(train_fraction=0.6, val_fraction=0.2, puzzles_per_train_grid=1, puzzles_per_eval_grid=1,
                     min_blanks=8, max_blanks=10)
    df = build_sudoku(cfg, seed=0)
    by_split = {s: set(df[df.split == s].grid_id) for s in ("train", "val", "test")}
    assert not (by_split["train"] & by_split["test"]) and not (by_split["train"] & by_split["val"])
    assert not (by_split["val"] & by_split["test"])
    assert sum(map(len, by_split.values())) == 288
    grids = sudoku_grids()
    for puzzle in df.puzzle.head(30):
        assert sudoku_solutions(np.array([int(c) for c in puzzle]), grids) == 1


def test_countdown_split_shares_no_triple_and_solutions_are_correct():
    cfg = CountdownData(max_number=8, max_target=50, train_fraction=0.6, val_fraction=0.2,
                        targets_per_train_triple=2, n_val=20, n_test=20)
    df = build_countdown(cfg, seed=0)
    by_split = {s: set(df[df.split == s].triple_id) for s in ("train", "val", "test")}
    assert not (by_split["train"] & by_split["test"]) and not (by_split["train"] & by_split["val"])
    for row in df.itertuples():
        assert countdown_reward([row.a, row.b, row.c], row.target, row.solution) == 1.0


def test_sudoku_reward_correct_wrong_and_malformed():
    puzzle, solution = "1034" + "0" * 12, "1234341221434321"
    assert sudoku_reward(puzzle, solution, solution) == 1.0
    wrong = "1" + "1" + solution[2:]             # one of 13 blanks wrong
    assert sudoku_reward(puzzle, solution, wrong) == pytest.approx(12 / 13)
    assert sudoku_reward(puzzle, solution, "12") == pytest.approx(1 / 13)   # truncated output
    assert sudoku_reward(puzzle, solution, "") == 0.0


@pytest.mark.parametrize(("text", "reward"), [
    ("(3*5)+7", 1.0), ("7+3*5", 1.0), ("(7+5)*3", 0.1),      # correct, correct, well-formed but wrong value
    ("(3*5)+8", 0.1), ("3*5+7+7", 0.1), ("(3/0)+5", 0.1),    # wrong numbers; reused number; division by zero
    ("(3*5+7", 0.0), ("3**5", 0.0), ("", 0.0), ("35+", 0.0),  # malformed
])
def test_countdown_reward(text, reward):
    assert countdown_reward([3, 5, 7], 22, text) == reward


def test_parse_equation_is_exact_rational():
    value, numbers = parse_equation("(1/3)*3")
    assert value == 1 and numbers == [1, 3, 3]


def test_encode_decode_roundtrip():
    ids = encode("(12+3)*4", 10)
    assert len(ids) == 10 and decode(ids) == "(12+3)*4"
    with pytest.raises(ValueError):
        encode("123456", 3)


def _objective_grads(model, prompt, completion, masks, old_shift, beta):
    """Gradients of the ESPO and the token-ELBO losses w.r.t. the weights, the old terms shifted per token."""
    adv = torch.tensor([1.0, -0.5])
    grads = []
    for which in ("espo", "token"):
        model.zero_grad()
        new = elbo_token_terms(model, prompt, completion, masks)
        old = new.detach() + old_shift
        ref = new.detach() - 0.3
        if which == "espo":
            loss = espo_loss(new.sum(1), old.sum(1), ref.sum(1), adv, L, 0.2, beta, "k2")
        else:
            loss = token_level_loss(new, old, ref, adv, masks.any(0), 0.2, beta, "k2")
        loss.backward()
        grads.append(torch.cat([p.grad.flatten() for p in model.parameters()]))
    return grads


def test_espo_and_token_elbo_gradients_coincide_at_ratio_one_and_differ_off_policy():
    torch.manual_seed(1)
    model = MaskedDiffusionLM(d_model=16, n_layers=1, n_heads=2, max_len=3 + L)
    prompt = torch.tensor([[3, 5, 7], [2, 4, 6]])
    completion = torch.tensor([[4, 9, 2, 6], [5, 3, 8, 7]])
    masks = elbo_mask_samples(2, L, 1, True, torch.Generator().manual_seed(0))
    assert masks.any(0).all()   # complementary masks: every token carries an ELBO term, the token mask is all true
    # θ = old: every ratio is 1, ∇ESPO = −A/L·Σ_k ∇ℓ_k = ∇token-ELBO (β = 0), so the two objectives are the same
    espo, token = _objective_grads(model, prompt, completion, masks, torch.zeros(2, L), beta=0.0)
    assert espo.abs().max() > 1e-4
    assert torch.allclose(espo, token, atol=1e-7, rtol=1e-5)
    # off-policy: per-token ratios spread (some outside the clip range), the sequence ratio is their geometric mean
    shift = torch.tensor([[0.5, -0.4, 0.3, -0.1], [-0.6, 0.2, 0.05, 0.25]])
    espo, token = _objective_grads(model, prompt, completion, masks, shift, beta=0.0)
    assert (espo - token).abs().max() > 0.1 * espo.abs().max()
    # unclipped but unequal token ratios already differ (ratio-weighted token gradients vs one sequence ratio)
    espo, token = _objective_grads(model, prompt, completion, masks, 0.1 * shift, beta=0.0)
    assert (espo - token).abs().max() > 0.01 * espo.abs().max()
