"""In-context estimators of the mixture weights λ: mirror descent and the Bayes posterior mean."""

from __future__ import annotations

import numpy as np
from scipy.special import logsumexp

from stages.mtd_mirror_descent.mtd import lag_transition_probs


def responsibilities(lag_probs: np.ndarray) -> np.ndarray:
    """Sec. 3: γ_k(g) = π*(y_{k−g}, y_k) / Σ_h π*(y_{k−h}, y_k); lag_probs (B, K, m)."""
    return lag_probs / lag_probs.sum(axis=-1, keepdims=True)


def log_likelihood_gradient(lag_probs: np.ndarray, lam: np.ndarray) -> np.ndarray:
    """∂L/∂λ_g = (1/K) Σ_k π*(y_{k−g}, y_k) / Σ_h λ_h π*(y_{k−h}, y_k), with L the average log-likelihood."""
    mix = np.einsum("bkg,bg->bk", lag_probs, lam)
    return np.mean(lag_probs / mix[..., None], axis=1)


def mirror_descent_step(lam: np.ndarray, grad: np.ndarray, eta: float) -> np.ndarray:
    """Entropic mirror descent (exponentiated gradient): λ_g ← λ_g exp(η ∂L/∂λ_g) / Z."""
    logits = np.log(lam) + eta * grad
    return np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))


def mirror_descent(pi: np.ndarray, tokens: np.ndarray, m: int, eta: float, steps: int) -> np.ndarray:
    """k-step mirror descent on L(λ) from uniform λ, using positions k ≥ m of each row of tokens."""
    lag_probs = lag_transition_probs(pi, tokens, m)
    lam = np.full((tokens.shape[0], m), 1.0 / m)
    for _ in range(steps):
        lam = mirror_descent_step(lam, log_likelihood_gradient(lag_probs, lam), eta)
    return lam


def one_step_closed_form(pi: np.ndarray, tokens: np.ndarray, m: int, eta: float) -> np.ndarray:
    """One step from uniform in closed form: λ̂_g ∝ exp(η m · mean_k γ_k(g))."""
    gamma_bar = responsibilities(lag_transition_probs(pi, tokens, m)).mean(axis=1)
    logits = eta * m * gamma_bar
    return np.exp(logits - logsumexp(logits, axis=-1, keepdims=True))


def _log_likelihoods(lag_probs: np.ndarray, samples: np.ndarray) -> np.ndarray:
    """log Π_k Σ_h λ_h π*(y_{k−h}, y_k) for every sequence (B) and λ sample (N): shape (B, N)."""
    return np.log(np.einsum("bkg,ng->bnk", lag_probs, samples)).sum(axis=-1)


def bayes_posterior_mean(pi: np.ndarray, tokens: np.ndarray, m: int, dirichlet_alpha: float, n_samples: int,
                         gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """E[λ | y_{1:T}] under the Dir(α) prior, by two-stage importance sampling; also returns the ESS.

    Stage 1 samples the prior; its weighted moments fit a Dirichlet proposal per sequence
    (method of moments), from which stage 2 draws n_samples with weights prior × likelihood / proposal.
    """
    from scipy.stats import dirichlet

    lag_probs = lag_transition_probs(pi, tokens, m)
    prior = gen.dirichlet(np.full(m, dirichlet_alpha), size=n_samples)
    log_w = _log_likelihoods(lag_probs, prior)
    w = np.exp(log_w - logsumexp(log_w, axis=1, keepdims=True))
    mean = w @ prior
    var = np.einsum("bn,bng->bg", w, (prior[None] - mean[:, None]) ** 2)
    # Dirichlet with this mean and (average) variance; tempered wider so its tails cover the posterior
    conc = np.clip(np.mean(mean * (1 - mean) / np.maximum(var, 1e-12), axis=1) - 1, 0.5, None) / 2.0
    out_mean = np.empty_like(mean)
    ess = np.empty(len(tokens))
    for b in range(len(tokens)):
        a = np.maximum(mean[b] * conc[b], 0.05)
        x = np.clip(gen.dirichlet(a, size=n_samples), 1e-300, None)
        x /= x.sum(axis=1, keepdims=True)
        log_wb = (_log_likelihoods(lag_probs[b:b + 1], x)[0] + dirichlet.logpdf(x.T, np.full(m, dirichlet_alpha))
                  - dirichlet.logpdf(x.T, a))
        wb = np.exp(log_wb - logsumexp(log_wb))
        out_mean[b] = wb @ x
        ess[b] = 1.0 / np.sum(wb**2)
    return out_mean, ess
