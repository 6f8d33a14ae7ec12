"""Step ``evaluate``: KL to the true next-token law vs T; which shrunk estimator each model is closest to."""

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
from stages.core.threads import cap_threads
from stages.mtd_mirror_descent.attention_only import AttentionOnlyTransformer, set_one_step_mirror_descent
from stages.mtd_mirror_descent.config import PAPER, EvaluateConfig, EvaluateInputs, ModelSpec, load_evaluate
from stages.mtd_mirror_descent.controls import (
    fit_beta,
    fit_positional_head,
    positional_head_tv,
    total_variation,
)
from stages.mtd_mirror_descent.io import load_split, read_tables
from stages.mtd_mirror_descent.mirror_descent import bayes_posterior_mean, mirror_descent, responsibilities
from stages.mtd_mirror_descent.models import build_model, init_seed
from stages.mtd_mirror_descent.mtd import kl_divergence, lag_transition_probs, next_token_distribution


@dataclass(frozen=True)
class Paths:
    pi: Path = inp("π*")
    sequences: Path = inp("sequences with λ")
    tokens: Path = inp("tokens")
    models: Path = inp("trained weights")
    evaluation: Path = out("metrics, KL tables, attention examples (JSON)")


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


def layer1_head_tv(attn: np.ndarray, gamma: np.ndarray, m: int) -> np.ndarray:
    """Each head's mean TV between its attention over lags 1..m (+ the mass elsewhere) and γ: shape (heads,)."""
    t = attn.shape[2]
    pos = np.arange(m, t)
    lag_mass = np.stack([attn[:, :, pos, pos - g] for g in range(1, m + 1)], axis=-1)  # (b, h, t−m, m)
    elsewhere = 1.0 - lag_mass.sum(axis=-1)
    tv = 0.5 * (np.abs(lag_mass - gamma[:, None]).sum(axis=-1) + elsewhere)
    return tv.mean(axis=(0, 2))


def load_trained(folder: Path, spec: ModelSpec, s: int, q: int, m: int, seq_len: int) -> torch.nn.Module:
    """A trained model from its safetensors file."""
    model = build_model(spec, q, m, seq_len)
    model.load_state_dict(load_safetensors(folder / f"{spec.name}_s{s}.safetensors"))
    return model.eval()


def shrunk_closeness(val_probs: np.ndarray, test_probs: np.ndarray, val_preds: dict, test_preds: dict,
                     lengths: list[int], grid: np.ndarray) -> dict[str, dict[str, float]]:
    """For each estimator: β fitted on validation, then the test TV of β·estimator + (1 − β)·uniform to the model."""
    out_ = {}
    for name in val_preds[lengths[0]]:
        if name == "uniform":
            continue
        beta = fit_beta([val_probs[:, t - 1] for t in lengths], [val_preds[t][name] for t in lengths],
                        [val_preds[t]["uniform"] for t in lengths], grid)
        tv = np.mean([total_variation(test_probs[:, t - 1], beta * test_preds[t][name]
                                      + (1.0 - beta) * test_preds[t]["uniform"]).mean() for t in lengths])
        out_[name] = {"beta": beta, "tv": float(tv)}
    return out_


def split_predictions(pi, tokens, lam, m, lengths, etas, ev, alpha, gen, desc):
    """Truth and every estimator's prediction at each T for one split; the Bayes ESS per T."""
    truth, preds, ess = {}, {}, {}
    for t in tqdm(lengths, desc=desc, unit="T"):
        truth[t] = next_token_distribution(pi, tokens[:, :t], lam, m)
        preds[t], ess[t] = estimator_predictions(pi, tokens, m, t, etas, ev, alpha, gen)
    return truth, preds, ess


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Every estimator and model on the test split, controls fitted on validation; per-seed metrics."""
    ev = cfg.evaluate
    cap_threads(ev.max_threads)
    pi, sequences, tokens, m = read_tables(paths)
    manifest = read_json(Path(paths.models) / "manifest.json")
    specs = {s["name"]: ModelSpec.model_validate(s) for s in manifest["models"]}
    for name in (ev.shallow_model, ev.deep_model, ev.baseline_model):
        if name not in specs:
            raise ValueError(f"{PAPER}.evaluate names model '{name}', trained models are {sorted(specs)}")
    if specs[ev.shallow_model].kind != "attention_only":
        raise ValueError(f"{PAPER}.evaluate.shallow_model must be attention-only (its layer 1 is checked)")
    n_seeds, q, seq_len = manifest["n_seeds"], manifest["q"], manifest["seq_len"]
    # the prediction of y_(T+1) is read at position T − 1, which training reached only if T < seq_len
    lengths = sorted(t for t in ev.lengths if m < t < seq_len)
    gate_lengths = [t for t in lengths if t >= ev.gate_min_length]
    if not gate_lengths:
        raise ValueError(f"{PAPER}.evaluate.lengths: none lies in [{ev.gate_min_length}, {seq_len - 1}]")
    val_tokens, val_lam = load_split(sequences, tokens, "val")
    test_tokens, test_lam = load_split(sequences, tokens, "test")
    grid = np.geomspace(ev.eta_grid.low, ev.eta_grid.high, ev.eta_grid.n)
    etas = {k: choose_eta(pi, val_tokens, val_lam, m, k, lengths, grid)
            for k in tqdm(ev.md_steps, desc="choose η on validation", unit="k")}

    gen = rng(ctx.seed, PAPER, "bayes")
    _, val_preds, _ = split_predictions(pi, val_tokens, val_lam, m, lengths, etas, ev, cfg.dirichlet_alpha, gen,
                                        "estimators (validation)")
    truth, preds, ess = split_predictions(pi, test_tokens, test_lam, m, lengths, etas, ev, cfg.dirichlet_alpha,
                                          gen, "estimators (test)")
    estimators = list(preds[lengths[0]])

    construction = AttentionOnlyTransformer(q, 3, q + 2 * m + 1, 2, max(q, m), m + 1).double()
    set_one_step_mirror_descent(construction, pi, m, etas[1])
    built, _ = model_outputs(construction, test_tokens)
    construction_error = max(float(np.abs(built[:, t - 1] - preds[t]["md1"]).max()) for t in lengths)

    kl = {name: {t: float(kl_divergence(truth[t], preds[t][name]).mean()) for t in lengths} for name in estimators}
    kl["oracle"] = {t: 0.0 for t in lengths}
    beta_grid = np.linspace(0.0, 1.0, ev.beta_grid_n)
    # scale of the closeness differences: TV between the estimators themselves on the test split
    estimator_tv = {f"{a}|{b}": float(np.mean([total_variation(preds[t][a], preds[t][b]).mean() for t in lengths]))
                    for i, a in enumerate(estimators) for b in estimators[i + 1:]}

    val_gamma = responsibilities(lag_transition_probs(pi, val_tokens, m))
    gamma = responsibilities(lag_transition_probs(pi, test_tokens, m))
    positional = fit_positional_head(val_gamma, ev.positional_grid_step)
    positional_tv = positional_head_tv(positional, gamma)
    reference_heads = {"uniform over lags 1..m": positional_head_tv(np.full(m, 1.0 / m), gamma),
                       "lag 1 only": positional_head_tv(np.eye(m)[0], gamma)}

    model_kl, closeness, shrunk, attention, examples = {}, {}, {}, {}, {}
    for name, spec in tqdm(specs.items(), desc="models", unit="model"):
        model_kl[name], closeness[name], shrunk[name], attention[name] = [], [], [], []
        for s in range(n_seeds):
            model = load_trained(Path(paths.models), spec, s, q, m, seq_len)
            probs, maps = model_outputs(model, test_tokens)
            val_probs, val_maps = model_outputs(model, val_tokens)
            model_kl[name].append({t: float(kl_divergence(truth[t], probs[:, t - 1]).mean()) for t in lengths})
            closeness[name].append({e: float(np.mean([total_variation(probs[:, t - 1], preds[t][e]).mean()
                                                      for t in lengths])) for e in estimators})
            shrunk[name].append(shrunk_closeness(val_probs, probs, val_preds, preds, lengths, beta_grid))
            if maps:
                head = int(np.argmin(layer1_head_tv(val_maps[0], val_gamma, m)))  # the head is chosen on validation
                untrained = build_model(spec, q, m, seq_len, init_seed(ctx.seed, name, s)).eval()
                _, maps0 = model_outputs(untrained, test_tokens)
                attention[name].append({"trained_tv": float(layer1_head_tv(maps[0], gamma, m)[head]),
                                        "untrained_tv": float(layer1_head_tv(maps0[0], gamma, m).min()),
                                        "positional_tv": positional_tv, "head": head})
                if s == 0:
                    examples[name] = maps[0][0, head, :24, :24].tolist()

    def margin_md1(runs: list[dict]) -> list[float]:
        return [r["bayes"]["tv"] - r["md1"]["tv"] for r in runs]

    multi = [f"md{k}" for k in ev.md_steps if k >= 2]
    sh, dp, bl = ev.shallow_model, ev.deep_model, ev.baseline_model
    per_seed = {
        "shallow_kl_over_md1": [min(r[t] / kl["md1"][t] for t in gate_lengths) for r in model_kl[sh]],
        "shallow_bayes_minus_md1_shrunk_tv": margin_md1(shrunk[sh]),
        "deep_multistep_margin_shrunk_tv": [min(r["md1"]["tv"], r["bayes"]["tv"]) - min(r[k]["tv"] for k in multi)
                                            for r in shrunk[dp]],
        "shallow_layer1_gain_over_positional": [a["positional_tv"] - a["trained_tv"] for a in attention[sh]],
    }
    reported = {
        "baseline_kl_over_md1": [min(r[t] / kl["md1"][t] for t in gate_lengths) for r in model_kl[bl]],
        "baseline_bayes_minus_md1_shrunk_tv": margin_md1(shrunk[bl]),
        "deep_kl_over_md1": [min(r[t] / kl["md1"][t] for t in gate_lengths) for r in model_kl[dp]],
        "shallow_multistep_margin_shrunk_tv": [min(r["md1"]["tv"], r["bayes"]["tv"]) - min(r[k]["tv"] for k in multi)
                                               for r in shrunk[sh]],
        "shallow_layer1_gain_over_untrained": [a["untrained_tv"] - a["trained_tv"] for a in attention[sh]],
    }
    write_json({"lengths": lengths, "gate_lengths": gate_lengths, "etas": {str(k): v for k, v in etas.items()},
                "kl": kl, "model_kl": model_kl, "closeness": closeness, "shrunk": shrunk,
                "estimator_tv": estimator_tv, "attention": attention, "per_seed": per_seed, "reported": reported,
                "positional_head": positional.tolist(), "reference_heads": reference_heads,
                "construction_max_abs_error": construction_error,
                "bayes_ess": {str(t): {"min": float(e.min()), "median": float(np.median(e)),
                                       "frac_above_floor": float(np.mean(e >= ev.ess_floor))} for t, e in ess.items()},
                "ess_floor": ev.ess_floor, "gamma_example": gamma[0, :24 - m].tolist(), "attention_examples": examples,
                "shallow_model": sh, "deep_model": dp, "baseline_model": bl, "n_test": len(test_tokens),
                "n_val": len(val_tokens), "seeds": list(range(n_seeds))},
               paths.evaluation, finite=True)
    return {k: float(np.mean(v)) if v else float("nan") for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
