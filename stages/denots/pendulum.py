"""The synthetic damped-pendulum task (the paper's pendulum ablation): irregular, Hawkes-like sampling.

θ'' = −(g / ℓ) sin θ − b θ', θ(0) = θ₀, θ'(0) = 0; observed at the event times of a
self-exciting (Hawkes) process with exponential kernel; the target is the length ℓ.
"""

from __future__ import annotations

import numpy as np
from scipy.integrate import solve_ivp


def pendulum_rhs(state: np.ndarray, length: float, damping: float, gravity: float) -> np.ndarray:
    """(θ, ω)' = (ω, −(g/ℓ) sin θ − b ω): the damped pendulum."""
    theta, omega = state
    return np.array([omega, -(gravity / length) * np.sin(theta) - damping * omega])


def simulate_pendulum(length: float, damping: float, theta0: float, times: np.ndarray,
                      gravity: float = 9.81) -> np.ndarray:
    """θ(t) at ``times`` (sorted, ≥ 0), released at rest from θ₀ (DOP853, tight tolerances)."""
    sol = solve_ivp(lambda _t, y: pendulum_rhs(y, length, damping, gravity), (0.0, float(times[-1]) + 1e-9),
                    [theta0, 0.0], method="DOP853", t_eval=times, rtol=1e-10, atol=1e-12)
    if not sol.success:
        raise RuntimeError(f"pendulum simulation failed: {sol.message}")
    return sol.y[0]


def small_angle_solution(length: float, damping: float, theta0: float, times: np.ndarray,
                         gravity: float = 9.81) -> np.ndarray:
    """Closed form of the linearised, under-damped pendulum: θ₀ e^{−bt/2}(cos ω_d t + b/(2ω_d) sin ω_d t)."""
    omega_d = np.sqrt(gravity / length - damping**2 / 4)
    return theta0 * np.exp(-damping * times / 2) * (np.cos(omega_d * times)
                                                     + damping / (2 * omega_d) * np.sin(omega_d * times))


def hawkes_times(mu: float, alpha: float, beta: float, horizon: float, rng: np.random.Generator,
                 max_events: int) -> np.ndarray:
    """Event times on [0, horizon) of a Hawkes process λ(t) = μ + α Σ e^{−β(t − tᵢ)} (Ogata thinning)."""
    if alpha >= beta:
        raise ValueError("alpha must be below beta for a stationary Hawkes process")
    events: list[float] = []
    t, excitation = 0.0, 0.0
    while len(events) < max_events:
        bound = mu + excitation
        wait = rng.exponential(1.0 / bound)
        t += wait
        if t >= horizon:
            break
        excitation *= np.exp(-beta * wait)
        if rng.uniform() * bound <= mu + excitation:
            events.append(t)
            excitation += alpha
    return np.asarray(events)
