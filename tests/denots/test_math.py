"""The method's math: provable field bounds, time scaling, divergence, the simulator, log-signatures."""

import math

import numpy as np
import pytest
import torch
import torchcde

from stages.denots.baselines import log_signature_depth2, windowed_log_signatures
from stages.denots.evaluate import accuracy, r_squared
from stages.denots.neural_cde import (
    DeNOTS,
    NeuralCDE,
    SolverDiverged,
    SolverSettings,
    cde_field,
    index_grid,
    interpolate_real_time,
    scaled_time,
    solve,
    spline_coefficients,
)
from stages.denots.pendulum import hawkes_times, simulate_pendulum, small_angle_solution
from stages.denots.vector_fields import (
    FIELDS,
    VectorField,
    anti_negative_feedback,
    n_parameters,
    strict_negative_feedback,
)

SOLVER = SolverSettings("dopri5", 1e-5, 1e-6, 10_000)


def _cell(seed: int, n_inputs: int = 3, hidden: int = 6, scale: float = 2.0) -> torch.nn.GRUCell:
    torch.manual_seed(seed)
    cell = torch.nn.GRUCell(n_inputs, hidden)
    with torch.no_grad():
        for p in cell.parameters():
            p.uniform_(-scale, scale)
    return cell


def _input_path(seed: int, n: int = 4, length: int = 12, channels: int = 3) -> torchcde.CubicSpline:
    gen = torch.Generator().manual_seed(seed)
    values = 3 * torch.randn(n, length, channels, generator=gen)
    return torchcde.CubicSpline(spline_coefficients(values), index_grid(length))


class _Field(torch.nn.Module):
    def __init__(self, fn, cell, path, horizon):
        super().__init__()
        self.fn, self.cell, self.path, self.horizon = fn, cell, path, horizon

    def forward(self, tau, h):
        return self.fn(self.cell, self.path.evaluate(scaled_time(tau, self.horizon)), h)


@pytest.mark.parametrize("seed", [0, 1])
def test_strict_feedback_keeps_each_coordinate_within_max_of_start_and_one(seed):
    cell, path = _cell(seed), _input_path(seed)
    h0 = torch.tensor([[5.0, -3.0, 0.5, -0.2, 1.5, 0.0]]).repeat(4, 1)
    h0[1:] = 0.3 * h0[1:]
    t = torch.linspace(0, 30, 61)
    traj = solve(_Field(strict_negative_feedback, cell, path, 30.0), h0, t, SOLVER)
    bound = torch.clamp(h0.abs(), min=1.0)
    assert (traj.abs() <= bound + 1e-4).all()


def test_strict_feedback_points_inward_outside_the_unit_box():
    cell = _cell(3)
    h = torch.tensor([[2.0, -4.0, 1.5, -1.1, 7.0, -2.5]])
    x = torch.randn(1, 3)
    f = strict_negative_feedback(cell, x, h)
    assert (torch.sign(h) * f < 0).all()


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_anti_feedback_speed_is_at_most_one_in_the_unit_box_and_outward_speed_at_most_one(seed):
    cell = _cell(seed)
    gen = torch.Generator().manual_seed(seed)
    x = 3 * torch.randn(2000, 3, generator=gen)
    inside = 2 * torch.rand(2000, 6, generator=gen) - 1
    assert (anti_negative_feedback(cell, x, inside).abs() <= 1.0).all()
    anywhere = 20 * torch.randn(2000, 6, generator=gen)
    assert (torch.sign(anywhere) * anti_negative_feedback(cell, x, anywhere) <= 1.0).all()


def test_anti_feedback_trajectories_grow_at_most_linearly():
    cell, path = _cell(4), _input_path(4)
    h0 = torch.randn(4, 6)
    t = torch.linspace(0, 40, 81)
    traj = solve(_Field(anti_negative_feedback, cell, path, 40.0), h0, t, SOLVER)
    assert (traj.abs() <= h0.abs() + t.view(-1, 1, 1) + 1e-4).all()


def _exploding_field() -> VectorField:
    field = VectorField("no_feedback_gru", 3, 6)
    with torch.no_grad():
        for p in field.parameters():
            p.zero_()
        field.cell.bias_ih[6:12] = 30.0  # update gate z ≈ 1, so f = z·h + (1 − z)·n ≈ h
    return field


def test_no_feedback_gru_with_open_update_gate_grows_without_bound():
    field, path = _exploding_field(), _input_path(5)
    h0 = torch.full((4, 6), 0.5)
    t = torch.tensor([0.0, 5.0, 10.0, 20.0])
    traj = solve(_Field(lambda cell, x, h: field(x, h), field.cell, path, 20.0), h0, t, SOLVER)
    np.testing.assert_allclose(traj[:, 0, 0].detach().numpy(), 0.5 * np.exp(t.numpy()), rtol=1e-3)


def _irregular(n: int = 4, length: int = 12, channels: int = 3, seed: int = 0) -> torch.Tensor:
    """(n, L, c) observations with channel 0 sorted real times in [0, 1]."""
    gen = torch.Generator().manual_seed(seed)
    times = torch.sort(torch.rand(n, length, generator=gen), dim=1).values
    return torch.cat([times.unsqueeze(-1), torch.randn(n, length, channels - 1, generator=gen)], dim=-1)


def test_divergent_configuration_is_reported_as_diverged():
    model = DeNOTS("no_feedback_gru", 3, 6, 1)
    model.field = _exploding_field()
    with pytest.raises(SolverDiverged):
        model(_irregular(2, 8), 200.0, SolverSettings("dopri5", 1e-3, 1e-4, 50))


def test_real_time_interpolation_hits_observations_midpoints_and_holds_the_ends():
    values = torch.tensor([[[0.1, 1.0], [0.3, 3.0], [0.7, -1.0], [0.7, -1.0]],   # last row: padding
                           [[0.0, 2.0], [0.5, 4.0], [0.6, 0.0], [1.0, 8.0]]])
    torch.testing.assert_close(interpolate_real_time(values, torch.tensor(0.3))[:, 1], torch.tensor([3.0, 3.2]))
    torch.testing.assert_close(interpolate_real_time(values, torch.tensor(0.2))[:, 1], torch.tensor([2.0, 2.8]))
    torch.testing.assert_close(interpolate_real_time(values, torch.tensor(0.05))[:, 1], torch.tensor([1.0, 2.2]))
    torch.testing.assert_close(interpolate_real_time(values, torch.tensor(0.9))[:, 1], torch.tensor([-1.0, 6.0]))
    # the time channel reads back the query time inside each sequence's observation window
    torch.testing.assert_close(interpolate_real_time(values, torch.tensor(0.5))[:, 0], torch.tensor([0.5, 0.5]))


def test_time_scaling_multiplies_observation_times_by_d():
    values = _irregular(3, 10)
    for d in (1.0, 10.0, 30.0):
        for k in (0, 4, 9):
            t_k = values[0, k, 0]
            # solver time D·t_k reads the input observed at real time t_k
            torch.testing.assert_close(interpolate_real_time(values, scaled_time(d * t_k, d))[0], values[0, k])
    torch.manual_seed(0)
    model = DeNOTS("anti_feedback", 3, 8, 1)
    settings = SolverSettings("dopri5", 1e-3, 1e-4, 5000)
    nfe = {}
    for d in (1.0, 30.0):
        with torch.no_grad():
            model(values, d, settings)
        nfe[d] = model.last_nfe
    assert nfe[30.0] > nfe[1.0]


def test_cde_field_is_matrix_times_control_derivative():
    g = torch.tensor([[[1.0, 2.0], [0.0, -1.0], [3.0, 0.5]]])
    torch.testing.assert_close(cde_field(g, torch.tensor([[2.0, 4.0]])), torch.tensor([[10.0, -4.0, 8.0]]))


def test_neural_cde_baseline_runs_counts_nfe_and_backpropagates_to_every_parameter():
    torch.manual_seed(0)
    model = NeuralCDE(3, 6, 2, 8)
    values = _irregular(4, 9)
    coeffs = spline_coefficients(values)
    out = model(coeffs, SolverSettings("dopri5", 1e-6, 1e-7, 10_000))
    assert out.shape == (4, 2) and torch.isfinite(out).all() and model.last_nfe > 0
    loss = out.pow(2).sum()
    loss.backward()
    assert all(p.grad is not None for p in model.parameters())


def test_four_fields_have_parameter_counts_within_ten_percent():
    for n_inputs in (2, 13):
        counts = [n_parameters(VectorField(f, n_inputs, 16)) for f in FIELDS]
        assert max(counts) <= 1.1 * min(counts), counts


def test_pendulum_simulator_matches_small_angle_closed_form():
    times = np.sort(np.random.default_rng(0).uniform(0, 8, 50))
    for length, damping in ((0.5, 0.1), (1.7, 0.3)):
        sim = simulate_pendulum(length, damping, 0.01, times)
        closed = small_angle_solution(length, damping, 0.01, times)
        assert np.abs(sim - closed).max() < 1e-3 * 0.01


def test_hawkes_times_are_increasing_and_have_the_stationary_mean_rate():
    gen = np.random.default_rng(1)
    counts = []
    for _ in range(300):
        t = hawkes_times(2.0, 1.0, 2.0, 20.0, gen, 10_000)
        assert np.all(np.diff(t) > 0) and (t < 20.0).all() and (t >= 0).all()
        counts.append(len(t))
    # stationary rate μ / (1 − α/β) = 4 per unit time; the start-up transient lowers it slightly
    assert 70 < np.mean(counts) < 82


def test_log_signature_depth2_of_an_l_shaped_path():
    path = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0]]])
    # increments (1, 1); Lévy area ½(∫x dy − ∫y dx) = ½(1 − 0)
    torch.testing.assert_close(log_signature_depth2(path), torch.tensor([[1.0, 1.0, 0.5]]))
    reversed_path = torch.tensor([[[0.0, 0.0], [0.0, 1.0], [1.0, 1.0]]])
    torch.testing.assert_close(log_signature_depth2(reversed_path), torch.tensor([[1.0, 1.0, -0.5]]))


def test_windowed_log_signatures_cover_the_path_and_ignore_padding():
    values = torch.tensor([[[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [2.0, 1.0], [2.0, 1.0]]])
    sigs = windowed_log_signatures(values, 2)
    assert sigs.shape == (1, 2, 3)
    torch.testing.assert_close(sigs[:, :, :2].sum(dim=1), values[:, -1] - values[:, 0])
    torch.testing.assert_close(sigs[0, 1], torch.tensor([1.0, 0.0, 0.0]))


def test_scores():
    assert r_squared(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0, 3.0])) == 1.0
    assert r_squared(np.full(3, 2.0), np.array([1.0, 2.0, 3.0])) == 0.0
    assert math.isclose(r_squared(np.array([0.0, 0.0]), np.array([1.0, 3.0])), 1 - 10 / 2)
    assert accuracy(np.array([[0.1, 0.9], [2.0, 1.0], [0.0, 1.0]]), np.array([1, 0, 0])) == pytest.approx(2 / 3)


def test_early_stopping_keeps_the_best_validation_checkpoint_and_stops_on_patience():
    from stages.denots.fitting import best_checkpoint, should_stop

    curve = [(0, 1.0), (25, 0.6), (50, 0.4), (75, 0.5), (100, float("inf")), (125, 0.45)]
    assert best_checkpoint(curve) == (50, 0.4)
    assert best_checkpoint([(0, float("inf"))]) == (0, float("inf"))
    assert not should_stop(curve[:5], 3) and should_stop(curve, 3)
    assert not should_stop([(0, 1.0), (1, 0.9), (2, 0.8), (3, 0.7)], 2)


def test_lr_is_chosen_on_validation_loss_never_test():
    import pandas as pd

    from stages.denots.evaluate import choose_lr

    frame = pd.DataFrame({"config_id": ["a", "a", "b", "b"], "lr": [0.003, 0.01, 0.003, 0.01],
                          "best_val_loss": [0.5, 0.4, 0.2, float("nan")], "diverged": [False, False, False, True],
                          "test_score": [0.9, 0.1, 0.0, 0.99]})
    assert choose_lr(frame).tolist() == [False, True, True, False]


def test_perturbing_by_one_ulp_moves_every_value_by_the_smallest_step():
    from stages.denots.io import perturb_one_ulp

    x = torch.tensor([0.0, 1.0, -2.5, 1e6])
    y = perturb_one_ulp(x)
    assert (y > x).all()
    torch.testing.assert_close(y[1] - x[1], torch.tensor(torch.finfo(torch.float32).eps))
