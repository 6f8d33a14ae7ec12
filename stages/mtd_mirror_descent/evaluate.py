"""Step ``evaluate``: KL to the true next-token law vs T; which estimator each model is closest to."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

from stages.core.io import load_safetensors, read_json, write_json
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.mtd_mirror_descent.attention_only import AttentionOnlyTransformer, set_one_step_mirror_descent
from stages.mtd_mirror_descent.config import PAPER, EvaluateConfig, EvaluateInputs, ModelSpec, load_evaluate
from stages.mtd_mirror_descent.io import load_split, read_tables
from stages.mtd_mirror_descent.mirror_descent import bayes_posterior_mean, mirror_descent, responsibilities
from stages.mtd_mirror_descent.models import build_model, init_seed
from stages.mtd_mirror_descent.mtd import kl_divergence, lag_transition_probs, next_token_distribution

ESTIMATORS = ("uniform", "md1", "md2", "md3", "bayes")


@dataclass(frozen=True)
class Paths:
    pi: Path = inp("π*")
    sequences: Path = inp("sequences with λ")
    tokens: Path = inp("tokens")
    models: Path = inp("trained weights")
    evaluation: Path = out("metrics, KL tables, attention examples (JSON)")


def total_variation(p: np.ndarray, q: np.ndarray) -> np.ndarray:
    """TV(p, q) = ½ Σ |p − q| along the last axis."""
    return 0.5 * np.abs(p - q).sum(axis=-1)


def choose_eta(pi: np.ndarray, tokens: np.ndarray, lam: np.ndarray, m: int, steps: int, lengths: list[int],
               grid: np.ndarray) -> float:
    """The η of k-step mirror descent with the least mean KL on the validation split."""
    truth = {t: next_token_distribution(pi, tokens[:, :t], lam, m) for t in lengths}

    def loss(eta: float) -> float:
        return float(np.mean([kl_divergence(truth[t], next_token_distribution(
            pi, tokens[:, :t], mirror_descent(pi, tokens[:, :t], m, eta, steps), m)).mean() for t in lengths]))

    return float(grid[int(np.argmin([loss(e) for e in grid]))])


def estimator_predictions(pi: np.ndarray, tokens: np.ndarray, m: int, t: int, etas: dict[int, float],
                          cfg: EvaluateConfig, alpha: float, gen: np.random.Generator) -> tuple[dict, np.ndarray]:
    """Predictions of y_{t+1} from y_{1:t} by every estimator; also the Bayes ESS per sequence."""
    prefix = tokens[:, :t]
    n = len(tokens)
    lams = {"uniform": np.full((n, m), 1.0 / m)}
    for k in cfg.md_steps:
        lams[f"md{k}"] = mirror_descent(pi, prefix, m, etas[k], k)
    lams["bayes"], ess = bayes_posterior_mean(pi, prefix, m, alpha, cfg.bayes_samples, gen)
    return {name: next_token_distribution(pi, prefix, lam, m) for name, lam in lams.items()}, ess


@torch.inference_mode()
def model_outputs(model: torch.nn.Module, tokens: np.ndarray) -> tuple[np.ndarray, list[np.ndarray]]:
    """Next-token distributions at every position, and attention maps when the model has them."""
    x = torch.as_tensor(tokens)
    if isinstance(model, AttentionOnlyTransformer):
        logp, maps = model(x, return_attention=True)
        return logp.exp().double().numpy(), [a.double().numpy() for a in maps]
    return model(x).exp().double().numpy(), []


def layer1_attention_tv(attn: np.ndarray, gamma: np.ndarray, m: int) -> tuple[float, int]:
    """Best head's mean TV between its attention over lags 1..m (+ the mass elsewhere) and γ."""
    t = attn.shape[2]
    pos = np.arange(m, t)
    lag_mass = np.stack([attn[:, :, pos, pos - g] for g in range(1, m + 1)], axis=-1)  # (b, h, t−m, m)
    elsewhere = 1.0 - lag_mass.sum(axis=-1)
    tv = 0.5 * (np.abs(lag_mass - gamma[:, None]).sum(axis=-1) + elsewhere)
    per_head = tv.mean(axis=(0, 2))
    return float(per_head.min()), int(per_head.argmin())


def load_trained(folder: Path, spec: ModelSpec, s: int, q: int, m: int, seq_len: int) -> torch.nn.Module:
    """A trained model from its safetensors file."""
    model = build_model(spec, q, m, seq_len)
    model.load_state_dict(load_safetensors(folder / f"{spec.name}_s{s}.safetensors"))
    return model.eval()


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every estimator and model on the test split; per-seed metrics for the verdict."""
    ev = cfg.evaluate
    pi, sequences, tokens, m = read_tables(paths)
    manifest = read_json(Path(paths.models) / "manifest.json")
    specs = {s["name"]: ModelSpec.model_validate(s) for s in manifest["models"]}
    for name in (ev.shallow_model, ev.deep_model):
        if name not in specs:
            raise ValueError(f"{PAPER}.evaluate names model '{name}', trained models are {sorted(specs)}")
    n_seeds, q, seq_len = manifest["n_seeds"], manifest["q"], manifest["seq_len"]
    # the prediction of y_(T+1) is read at position T − 1, which training reached only if T < seq_len
    lengths = sorted(t for t in ev.lengths if m < t < seq_len)
    if not lengths:
        raise ValueError(f"{PAPER}.evaluate.lengths: none lies in ({m}, {seq_len - 1}]")
    val_tokens, val_lam = load_split(sequences, tokens, "val")
    test_tokens, test_lam = load_split(sequences, tokens, "test")
    grid = np.geomspace(ev.eta_grid.low, ev.eta_grid.high, ev.eta_grid.n)
    etas = {k: choose_eta(pi, val_tokens, val_lam, m, k, lengths, grid)
            for k in tqdm(ev.md_steps, desc="choose η on validation", unit="k")}

    gen = rng(ctx.seed, PAPER, "bayes")
    truth, preds, ess = {}, {}, {}
    for t in tqdm(lengths, desc="estimators", unit="T"):
        truth[t] = next_token_distribution(pi, test_tokens[:, :t], test_lam, m)
        preds[t], ess[t] = estimator_predictions(pi, test_tokens, m, t, etas, ev, cfg.dirichlet_alpha, gen)

    construction = AttentionOnlyTransformer(q, 3, q + 2 * m + 1, 2, max(q, m), m + 1).double()
    set_one_step_mirror_descent(construction, pi, m, etas[1])
    built, _ = model_outputs(construction, test_tokens)
    construction_error = max(float(np.abs(built[:, t - 1] - preds[t]["md1"]).max()) for t in lengths)

    kl = {name: {t: float(kl_divergence(truth[t], preds[t][name]).mean()) for t in lengths} for name in ESTIMATORS}
    kl["oracle"] = {t: 0.0 for t in lengths}
    gamma = responsibilities(lag_transition_probs(pi, test_tokens, m))
    model_kl, closeness, attention, examples = {}, {}, {}, {}
    for name, spec in tqdm(specs.items(), desc="models", unit="model"):
        model_kl[name], closeness[name], attention[name] = [], [], []
        for s in range(n_seeds):
            probs, maps = model_outputs(load_trained(Path(paths.models), spec, s, q, m, seq_len), test_tokens)
            model_kl[name].append({t: float(kl_divergence(truth[t], probs[:, t - 1]).mean()) for t in lengths})
            closeness[name].append({e: float(np.mean([total_variation(probs[:, t - 1], preds[t][e]).mean()
                                                      for t in lengths])) for e in ESTIMATORS})
            if maps:
                untrained = build_model(spec, q, m, seq_len, init_seed(ctx.seed, name, s)).eval()
                _, maps0 = model_outputs(untrained, test_tokens)
                trained_tv, head = layer1_attention_tv(maps[0], gamma, m)
                untrained_tv, _ = layer1_attention_tv(maps0[0], gamma, m)
                attention[name].append({"trained_tv": trained_tv, "untrained_tv": untrained_tv, "head": head})
                if s == 0:
                    examples[name] = maps[0][0, head, :24, :24].tolist()
    sh, dp = ev.shallow_model, ev.deep_model
    per_seed = {
        "shallow_uniform_minus_md1_tv": [c["uniform"] - c["md1"] for c in closeness[sh]],
        "shallow_bayes_minus_md1_tv": [c["bayes"] - c["md1"] for c in closeness[sh]],
        "md2_tv_shallow_minus_deep": [a["md2"] - b["md2"] for a, b in zip(closeness[sh], closeness[dp], strict=True)],
        "shallow_layer1_tv_gain": [a["untrained_tv"] - a["trained_tv"] for a in attention.get(sh, [])],
    }
    write_json({"lengths": lengths, "etas": {str(k): v for k, v in etas.items()}, "kl": kl, "model_kl": model_kl,
                "closeness": closeness, "attention": attention, "per_seed": per_seed,
                "construction_max_abs_error": construction_error,
                "bayes_ess": {str(t): {"min": float(e.min()), "median": float(np.median(e)),
                                       "frac_above_floor": float(np.mean(e >= ev.ess_floor))} for t, e in ess.items()},
                "ess_floor": ev.ess_floor, "gamma_example": gamma[0, :24 - m].tolist(), "attention_examples": examples,
                "shallow_model": sh, "deep_model": dp, "n_test": len(test_tokens), "seeds": list(range(n_seeds))},
               paths.evaluation)
    return {k: float(np.mean(v)) if v else float("nan") for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
