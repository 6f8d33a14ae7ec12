"""The paper's equations and the metrics against hand-computed values."""

import numpy as np
import pandas as pd
import pytest
import torch

from stages.core.image_metrics import frechet_distance, precision_recall
from stages.purrception.evaluate import marginal_codes
from stages.purrception.flow_matching import (
    FlowTransformer,
    continuous_velocity,
    euler_path,
    interpolate,
    mask_codes,
    posterior_mean,
    purrception_loss,
    sample_codes,
    sample_posterior_code,
    time_grid,
    velocity_from_endpoint,
    z_loss,
)
from stages.purrception.report import loss_rows, pick_columns, speedup, steps_to_target
from stages.purrception.vq import VQVAE, codebook_perplexity, nearest_code


def test_interpolation_endpoints_and_midpoint():
    z0, z1 = torch.randn(3, 4, 2), torch.randn(3, 4, 2)
    assert torch.equal(interpolate(z0, z1, torch.zeros(3)), z0)
    assert torch.equal(interpolate(z0, z1, torch.ones(3)), z1)
    torch.testing.assert_close(interpolate(z0, z1, torch.full((3,), 0.25)), 0.25 * z1 + 0.75 * z0)


def test_velocity_from_a_one_hot_posterior_points_exactly_at_that_code():
    codebook = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]])
    logits = torch.tensor([[[0.0, 1e4, 0.0]]])  # posterior = one-hot on code 1
    mu = posterior_mean(logits, codebook)
    torch.testing.assert_close(mu, torch.tensor([[[0.0, 2.0]]]))
    z_t, t = torch.tensor([[[0.5, 0.5]]]), torch.tensor([0.75])
    v = velocity_from_endpoint(mu, z_t, t)
    torch.testing.assert_close(v, torch.tensor([[[-2.0, 6.0]]]))  # (e_1 − z_t)/(1 − t)
    torch.testing.assert_close(z_t + (1 - t) * v, codebook[1].view(1, 1, 2))  # one Euler step to t = 1 lands on e_1


def test_temperature_sharpens_the_posterior_mean():
    codebook = torch.tensor([[0.0], [1.0]])
    logits = torch.tensor([[0.0, 1.0]])
    p1 = 1 / (1 + np.exp(-1.0))
    torch.testing.assert_close(posterior_mean(logits, codebook, 1.0), torch.tensor([[p1]], dtype=torch.float32))
    assert posterior_mean(logits, codebook, 0.1).item() > 0.99
    assert abs(posterior_mean(logits, codebook, 100.0).item() - 0.5) < 0.01


def test_z_loss_is_the_mean_squared_log_normaliser():
    logits = torch.tensor([[0.0, 0.0], [np.log(3.0), 0.0]])
    expected = (np.log(2.0) ** 2 + np.log(4.0) ** 2) / 2
    assert z_loss(logits).item() == pytest.approx(expected, rel=1e-6)
    codes = torch.tensor([0, 1])
    ce = (np.log(2.0) + np.log(4.0)) / 2
    assert purrception_loss(logits, codes, 1e-5).item() == pytest.approx(ce + 1e-5 * expected, rel=1e-6)


def test_mask_codes_keeps_everything_at_t_one_and_nothing_at_t_zero():
    codes = torch.randint(0, 5, (4, 9))
    assert torch.equal(mask_codes(codes, torch.ones(4), 5), codes)
    assert (mask_codes(codes, torch.zeros(4), 5) == 5).all()


def test_time_grid_never_reaches_one():
    times, h = time_grid(10, 0.001)
    assert times[0].item() == pytest.approx(0.001) and times[-1].item() == pytest.approx(1 - h)
    assert times.max().item() < 1.0


def test_the_quantiser_maps_each_codebook_vector_to_its_own_index():
    torch.manual_seed(0)
    codebook = torch.randn(32, 6)
    assert torch.equal(nearest_code(codebook, codebook), torch.arange(32))
    vq = VQVAE(8, 3, 4)
    codes, _ = vq.quantize(vq.codebook.weight.detach().view(1, 2, 4, 3))
    assert torch.equal(codes.flatten(), torch.arange(8))
    assert codebook_perplexity(torch.arange(8), 8) == pytest.approx(8.0)


def test_samplers_return_valid_codes_for_every_method():
    codebook = torch.randn(7, 3)
    for method in ("purrception", "cfm_velocity", "cfm_endpoint", "discrete_fm"):
        for stochastic in (False, True):
            net = FlowTransformer(method, 7, 3, 5, 8, 1, 2).eval()
            codes = sample_codes(net, codebook, 6, 4, 0.001, 1.0, torch.Generator().manual_seed(0), stochastic)
            assert codes.shape == (6, 5) and codes.dtype == torch.long
            assert codes.min() >= 0 and codes.max() < 7


def test_posterior_draw_follows_the_tempered_categorical():
    one_hot = torch.tensor([[[-1e4, 0.0, -1e4]]]).expand(4, 5, 3)
    assert (sample_posterior_code(one_hot, 1.0, torch.Generator().manual_seed(0)) == 1).all()
    logits = torch.tensor([0.0, np.log(3.0)]).expand(20000, 2)  # p = (1/4, 3/4) at τ = 1
    draws = sample_posterior_code(logits, 1.0, torch.Generator().manual_seed(0)).float()
    assert draws.mean().item() == pytest.approx(0.75, abs=0.01)
    # τ = 2 flattens to softmax(logits/2): p(1) = √3/(1 + √3) ≈ 0.634
    draws = sample_posterior_code(logits, 2.0, torch.Generator().manual_seed(0)).float()
    assert draws.mean().item() == pytest.approx(np.sqrt(3) / (1 + np.sqrt(3)), abs=0.01)


class _Confident(torch.nn.Module):
    """A stand-in network whose posterior puts (almost) all mass on code ``k`` everywhere."""

    def __init__(self, k: int, n_codes: int, seq_len: int, confidence: float) -> None:
        super().__init__()
        self.method, self.k, self.n_codes, self.confidence = "purrception", k, n_codes, confidence
        self.pos = torch.nn.Parameter(torch.zeros(seq_len, 2))

    def forward(self, x: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        logits = torch.zeros(*x.shape[:2], self.n_codes)
        logits[..., self.k] = self.confidence
        return logits


def test_both_purrception_samplers_land_on_a_certain_code_and_differ_when_uncertain():
    codebook = torch.tensor([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    sure = _Confident(2, 3, 4, 50.0)
    for stochastic in (False, True):
        assert (sample_codes(sure, codebook, 8, 5, 0.001, 1.0, torch.Generator().manual_seed(0), stochastic)
                == 2).all()
    unsure = _Confident(2, 3, 4, 0.5)  # p(2) = e^0.5 / (2 + e^0.5) ≈ 0.45
    det = sample_codes(unsure, codebook, 500, 5, 0.001, 1.0, torch.Generator().manual_seed(0), False)
    sto = sample_codes(unsure, codebook, 500, 5, 0.001, 1.0, torch.Generator().manual_seed(0), True)
    assert (det == 2).all()  # argmax of the same posterior
    frac = (sto == 2).float().mean().item()
    assert frac == pytest.approx(np.exp(0.5) / (2 + np.exp(0.5)), abs=0.06)


def test_marginal_codes_follow_each_positions_frequency():
    train = torch.tensor([[0, 3], [0, 3], [1, 3], [1, 2]])  # position 0: codes 0/1 half each; position 1: 3 w.p. 3/4
    draws = marginal_codes(train, 4, 8000, 0)
    assert draws.shape == (8000, 2)
    assert set(draws[:, 0].tolist()) == {0, 1}
    assert (draws[:, 0] == 0).float().mean().item() == pytest.approx(0.5, abs=0.02)
    assert (draws[:, 1] == 3).float().mean().item() == pytest.approx(0.75, abs=0.02)
    assert set(draws[:, 1].tolist()) == {2, 3}


def test_speedup_and_checkpoint_columns():
    assert speedup(800, 400) == 2.0 and speedup(300, 600) == 0.5
    assert pick_columns(list(range(100, 2001, 100)), 8)[-1] == 2000
    assert pick_columns([2, 4], 8) == [2, 4]


def test_frechet_distance_is_zero_on_itself_and_grows_with_a_shift():
    x = np.random.default_rng(0).normal(size=(400, 5))
    assert frechet_distance(x, x) == pytest.approx(0.0, abs=1e-6)
    shifts = [frechet_distance(x, x + np.array([s, 0, 0, 0, 0])) for s in (0.5, 1.0, 2.0)]
    assert shifts == pytest.approx([0.25, 1.0, 4.0], rel=1e-6)  # ‖Δμ‖² with equal covariances


def test_precision_recall_on_identical_and_disjoint_sets():
    x = np.random.default_rng(1).normal(size=(100, 4))
    assert precision_recall(x, x, 3) == (1.0, 1.0)
    assert precision_recall(x, x + 100.0, 3) == (0.0, 0.0)


def test_steps_to_target_takes_the_first_checkpoint_or_never():
    assert steps_to_target([10, 20, 40], [9.0, 4.0, 3.0], 5.0, 41) == 20
    assert steps_to_target([10, 20, 40], [9.0, 8.0, 7.0], 5.0, 41) == 41


def test_discrete_sampler_leaves_no_mask_token_whatever_the_rounding():
    net = FlowTransformer("discrete_fm", 5, 2, 6, 8, 1, 2).eval()
    for n_steps in (3, 4, 7, 50):
        codes = sample_codes(net, torch.randn(5, 2), 64, n_steps, 0.001, 1.0, torch.Generator().manual_seed(1))
        assert codes.max() < 5


def test_loss_rows_give_the_last_window_and_its_change():
    log = pd.DataFrame({"method": "m", "seed_index": 0, "step": range(1, 11), "loss": [9, 9, 9, 9, 8, 7, 6, 5, 4, 3]})
    (row,) = loss_rows(log, window=2, span=5)
    assert row["loss, last 2 steps"] == "3.500"  # steps 9 and 10
    assert row["change over the last 5 steps"] == "-5.000"  # steps 4 and 5 averaged 8.5


class _Oracle(torch.nn.Module):
    """A stand-in continuous-FM net whose field points every position at one code's embedding ``target``.

    ``cfm_endpoint`` outputs the endpoint x̂₁ = target; ``cfm_velocity`` outputs the consistent velocity
    (target − z_t)/(1 − t) of the straight path to it.
    """

    def __init__(self, method: str, target: torch.Tensor, seq_len: int) -> None:
        super().__init__()
        self.method, self.target = method, target
        self.pos = torch.nn.Parameter(torch.zeros(seq_len, target.shape[-1]))

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        endpoint = self.target.expand_as(z)
        if self.method == "cfm_endpoint":
            return endpoint
        return (endpoint - z) / (1 - t.view(-1, 1, 1))


def test_one_euler_step_of_the_endpoint_field_by_hand():
    # ε = 0.2, 2 steps: h = 0.4, t = 0.2 then 0.6; target e = (3, 0.5) from z = (1, −2)
    e, z = torch.tensor([3.0, 0.5]), torch.tensor([[[1.0, -2.0]]])
    states = euler_path(lambda z_, t_: continuous_velocity(_Oracle("cfm_endpoint", e, 1), z_, t_), z, 2, 0.2)
    # step 1: v = (e − z)/(1 − 0.2) = (2, 2.5)/0.8 = (2.5, 3.125); z + 0.4·v = (2, −0.75)
    torch.testing.assert_close(states[1], torch.tensor([[[2.0, -0.75]]]))
    # step 2: v = (e − z)/(1 − 0.6) = (1, 1.25)/0.4; z + 0.4·v = e exactly
    torch.testing.assert_close(states[2], e.view(1, 1, 2))


def test_a_constant_velocity_field_moves_by_one_minus_eps_times_it():
    z = torch.zeros(2, 3, 2)
    states = euler_path(lambda z_, t_: torch.tensor([1.0, -2.0]).expand_as(z_), z, 4, 0.2)
    assert len(states) == 5
    torch.testing.assert_close(states[1], torch.tensor([0.2, -0.4]).expand(2, 3, 2))  # h = 0.8/4
    torch.testing.assert_close(states[-1], torch.tensor([0.8, -1.6]).expand(2, 3, 2))


@pytest.mark.parametrize("n_steps", [1, 3, 10, 25])
def test_cfm_samplers_with_an_oracle_field_land_on_the_target_code_and_agree(n_steps):
    codebook = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0], [0.5, 0.5]])
    z0 = torch.randn((6, 5, 2), generator=torch.Generator().manual_seed(0))
    paths = {m: euler_path(lambda z_, t_, m=m: continuous_velocity(_Oracle(m, codebook[1], 5), z_, t_), z0,
                           n_steps, 0.001) for m in ("cfm_endpoint", "cfm_velocity")}
    for a, b in zip(paths["cfm_endpoint"], paths["cfm_velocity"], strict=True):  # the same trajectory
        torch.testing.assert_close(a, b)
    # the last step has h/(1 − t) = 1: the state is the oracle's endpoint, exactly on the code
    torch.testing.assert_close(paths["cfm_endpoint"][-1], codebook[1].expand(6, 5, 2))
    for m in ("cfm_endpoint", "cfm_velocity"):
        codes = sample_codes(_Oracle(m, codebook[1], 5), codebook, 6, n_steps, 0.001,
                             generator=torch.Generator().manual_seed(0))
        assert (codes == 1).all()


def test_the_cfm_sampler_snaps_its_final_state_to_the_nearest_code():
    codebook = torch.tensor([[1.0, 0.0], [0.0, 2.0], [-1.0, -1.0]])
    near_code_2 = torch.tensor([-0.8, -1.1])  # closer to e_2 than to any other code
    codes = sample_codes(_Oracle("cfm_endpoint", near_code_2, 3), codebook, 4, 5, 0.001,
                         generator=torch.Generator().manual_seed(0))
    assert (codes == 2).all()


def test_cfm_sampler_uses_the_seeded_noise_and_is_deterministic_given_it():
    net = FlowTransformer("cfm_velocity", 7, 3, 5, 8, 1, 2).eval()
    codebook = torch.randn(7, 3)
    a = sample_codes(net, codebook, 6, 4, 0.001, generator=torch.Generator().manual_seed(3))
    b = sample_codes(net, codebook, 6, 4, 0.001, generator=torch.Generator().manual_seed(3))
    assert torch.equal(a, b)
    z0 = torch.randn((6, 5, 3), generator=torch.Generator().manual_seed(3))
    with torch.no_grad():
        z1 = euler_path(lambda z_, t_: continuous_velocity(net, z_, t_), z0, 4, 0.001)[-1]
    assert torch.equal(a, nearest_code(z1, codebook))


class FixedLogits(torch.nn.Module):
    """A Purrception net whose posterior logits are the same at every position and time; it records each state."""

    method = "purrception"

    def __init__(self, logits: torch.Tensor) -> None:
        super().__init__()
        self.pos = torch.nn.Parameter(torch.zeros(1, len(logits)))
        self.logits = logits
        self.seen: list[torch.Tensor] = []

    def forward(self, z: torch.Tensor, t: torch.Tensor) -> torch.Tensor:
        self.seen.append(z.clone())
        return self.logits.expand(*z.shape[:2], len(self.logits))


def test_deterministic_purrception_follows_the_posterior_mean_ode_by_hand():
    # uniform posterior over two codes at every step: μ = (e_0 + e_1)/2 = (0.5, 0.5); every step moves towards μ;
    # the decoded code is the argmax of the last logits (tie → the first index), independent of z
    codebook = torch.tensor([[1.0, 0.0], [0.0, 1.0]])

    net = FixedLogits(torch.zeros(2))
    codes = sample_codes(net, codebook, 1, 2, 0.2, generator=torch.Generator().manual_seed(0))
    assert codes.tolist() == [[0]]
    z0 = torch.randn((1, 1, 2), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(net.seen[0], z0)
    # h = 0.4, t = 0.2: z ← z + 0.4·(μ − z)/0.8 = (z + μ)/2
    torch.testing.assert_close(net.seen[1], (z0 + torch.tensor([0.5, 0.5])) / 2)


def test_stochastic_purrception_moves_towards_the_drawn_code_by_hand():
    # a posterior certain of code 1 at the first step: z ← z + 0.4·(e_1 − z)/0.8 = (z + e_1)/2
    codebook = torch.tensor([[1.0, 0.0], [0.0, 1.0]])

    net = FixedLogits(torch.tensor([-1e4, 0.0]))
    assert sample_codes(net, codebook, 1, 2, 0.2, generator=torch.Generator().manual_seed(0), stochastic=True
                        ).tolist() == [[1]]
    z0 = torch.randn((1, 1, 2), generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(net.seen[1], (z0 + codebook[1]) / 2)
