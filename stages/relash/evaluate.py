"""Step ``evaluate``: sample every generator, decode with one rule, measure fidelity to the held-out test hyperlinks.

Per data set and seed, each candidate set has as many hyperlinks as the validation split:
the validation split itself (real, held out: the positive control), the degree-preserving
null, the Gaussian on ReLaSH's latents, the VAE, and ReLaSH. All are compared with the test
split (the latest hyperlinks in time).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.relash.baselines import (
    degree_null_probabilities,
    fit_gaussian,
    gaussian_log_density,
    sample_gaussian,
)
from stages.relash.config import PAPER, EvaluateInputs, load_evaluate
from stages.relash.diffusion import sample_reverse_sde
from stages.relash.embedding import decode_latents, membership_logits
from stages.relash.expectations import samples_suite
from stages.relash.generation import decode_hyperlinks, memorisation_rate, mixture_log_likelihood
from stages.relash.hypergraph import ATTRIBUTES
from stages.relash.io import DataSet, FittedModels, dataset_arrays, load_models, model_file, read_hyperlinks, read_nodes
from stages.relash.metrics import fidelity, hyperlink_features

GENERATORS = ("null", "gaussian", "vae", "relash")
BASELINES = ("null", "gaussian", "vae")
CONTROL = "heldout_real"
FAMILIES = {"structure": "structure_score", "attribute": "attribute_score", "frechet": "frechet"}


@dataclass(frozen=True)
class Paths:
    hyperlinks: Path = inp("hyperlinks")
    nodes: Path = inp("nodes")
    models: Path = inp("fitted models")
    evaluation: Path = out("per-seed metrics and per-(data set, seed, method) tables (JSON)")
    samples: Path = out("generated hyperlinks of the first seed (Parquet)")


def generate(method: str, fm: FittedModels, ds: DataSet, n: int, cfg: EvaluateInputs,
             seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Membership probabilities and attributes (raw units) of n hyperlinks from one generator."""
    rng = np.random.default_rng(seed)
    gen = torch.Generator().manual_seed(seed % 2**63)
    x_train = ds.attributes["train"]
    if method == "null":
        probs = np.tile(degree_null_probabilities(ds.incidence["train"]), (n, 1))
        mean, cov = fit_gaussian(x_train)
        return probs, sample_gaussian(mean, cov, n, rng)
    if method == "relash":
        t = cfg.train
        u = sample_reverse_sde(fm.score, n, t.latent_dim, cfg.evaluate.sampler_steps, t.t_min, t.t_max, gen)
        return decode_latents(fm.embedding, u, gen)
    if method == "gaussian":
        u = torch.as_tensor(sample_gaussian(fm.gaussian_mean, fm.gaussian_cov, n, rng), dtype=torch.float32)
        return decode_latents(fm.embedding, u, gen)
    with torch.no_grad():
        logits, x_mean = fm.vae.decode(torch.randn(n, cfg.train.latent_dim, generator=gen))
        x = x_mean + torch.randn(x_mean.shape, generator=gen) * torch.exp(fm.vae.log_s)[None, :]
    scale = x_train.std(axis=0) + 1e-8
    return torch.sigmoid(logits).numpy().astype(np.float64), x.numpy() * scale + x_train.mean(axis=0)


def heldout_log_likelihood(method: str, fm: FittedModels, ds: DataSet, cfg: EvaluateInputs, seed: int) -> float:
    """Mean per test hyperlink of log p(memberships, attributes): exact for the null, else a Monte-Carlo mixture."""
    a, x = ds.incidence["test"].astype(np.float64), ds.attributes["test"]
    s = cfg.evaluate.likelihood_samples
    gen = torch.Generator().manual_seed(seed % 2**63)
    if method == "null":
        p = np.clip(degree_null_probabilities(ds.incidence["train"]), 1e-6, 1 - 1e-6)
        mean, cov = fit_gaussian(ds.attributes["train"])
        ll = a @ np.log(p) + (1 - a) @ np.log1p(-p) + gaussian_log_density(x, mean, cov)
        return float(ll.mean())
    with torch.no_grad():
        if method == "vae":
            logits, x_mean = fm.vae.decode(torch.randn(s, cfg.train.latent_dim, generator=gen))
            log_s = fm.vae.log_s.numpy().astype(np.float64)
            center, scale = ds.attributes["train"].mean(axis=0), ds.attributes["train"].std(axis=0) + 1e-8
        else:
            emb = fm.embedding
            t = cfg.train
            u = (sample_reverse_sde(fm.score, s, t.latent_dim, cfg.evaluate.sampler_steps, t.t_min, t.t_max, gen)
                 if method == "relash" else
                 torch.as_tensor(sample_gaussian(fm.gaussian_mean, fm.gaussian_cov, s, np.random.default_rng(seed)),
                                 dtype=torch.float32))
            logits = membership_logits(u, emb.Z, emb.alpha)
            x_mean = emb.gamma[None, :] + u @ emb.B.T
            log_s = emb.log_s.numpy().astype(np.float64)
            center, scale = emb.x_mean.numpy().astype(np.float64), emb.x_std.numpy().astype(np.float64)
    x_std = (x - center) / scale
    ll = mixture_log_likelihood(a, x_std, logits.numpy().astype(np.float64), x_mean.numpy().astype(np.float64), log_s)
    return float((ll - np.log(scale).sum()).mean())


def evaluate_one(ds: DataSet, fm: FittedModels, cfg: EvaluateInputs, seed: int) -> tuple[list[dict], pd.DataFrame]:
    """Metrics of the held-out real control and every generator against the test split."""
    n = len(ds.members["val"])
    feats_train = hyperlink_features(ds.members["train"], ds.attributes["train"], ds.node_features)
    f_mean, f_std = feats_train.mean(axis=0), feats_train.std(axis=0) + 1e-12

    def score(members: list[str], x: np.ndarray) -> dict[str, float]:
        out = fidelity(members, x, ds.members["test"], ds.attributes["test"], ds.node_class, ds.n_classes,
                       ds.node_features, f_mean, f_std)
        return out | {"memorisation": memorisation_rate(members, ds.members["train"])}

    rows = [{"method": CONTROL, **score(ds.members["val"], ds.attributes["val"]), "heldout_loglik": float("nan")}]
    samples = []
    for method in GENERATORS:
        s = derive_seed(seed, method)
        probs, x = generate(method, fm, ds, n, cfg, s)
        members = decode_hyperlinks(probs, np.random.default_rng(derive_seed(s, "decode")), cfg.evaluate.decode_tries)
        rows.append({"method": method, **score(members, x),
                     "heldout_loglik": heldout_log_likelihood(method, fm, ds, cfg, derive_seed(s, "likelihood"))})
        samples.append(pd.DataFrame({"method": method, "members": members, "size": [len(m.split()) for m in members],
                                     **{a: x[:, k] for k, a in enumerate(ATTRIBUTES)}}))
    return rows, pd.concat(samples, ignore_index=True)


def per_seed_checks(table: pd.DataFrame) -> dict[str, list[float]]:
    """Per seed, the worst data set: ReLaSH over the best baseline per family, memorisation, control over null."""
    out: dict[str, list[float]] = {f"{f}_ratio": [] for f in FAMILIES} | {"memorisation_rate": [], "control_ratio": []}
    for s in sorted(table.seed_index.unique()):
        t = table[table.seed_index == s]
        ratios = {f: [] for f in FAMILIES}
        control, memo = [], []
        for _, g in t.groupby("dataset"):
            by = g.set_index("method")
            for f, col in FAMILIES.items():
                ratios[f].append(by.loc["relash", col] / max(by.loc[list(BASELINES), col].min(), 1e-12))
                control.append(by.loc[CONTROL, col] / max(by.loc["null", col], 1e-12))
            memo.append(by.loc["relash", "memorisation"])
        for f in FAMILIES:
            out[f"{f}_ratio"].append(float(max(ratios[f])))
        out["memorisation_rate"].append(float(max(memo)))
        out["control_ratio"].append(float(max(control)))
    return out


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Evaluate every (data set, seed) and derive the per-seed verdict metrics."""
    cap_threads(cfg.evaluate.max_threads)
    hyperlinks, nodes = read_hyperlinks(paths.hyperlinks), read_nodes(paths.nodes)
    t = cfg.train
    rows, samples = [], []
    jobs = [(d, s) for d in hyperlinks.dataset.unique() for s in range(t.n_seeds)]
    for name, s in tqdm(jobs, desc="data set × seed", unit="eval"):
        ds = dataset_arrays(name, hyperlinks, nodes)
        fm = load_models(model_file(paths.models, name, s), len(ds.node_class), len(ATTRIBUTES), t.latent_dim,
                         t.score_hidden, t.vae_hidden)
        r, smp = evaluate_one(ds, fm, cfg, derive_seed(ctx.seed, PAPER, "evaluate", name, s))
        rows += [{"dataset": name, "seed_index": s, **x} for x in r]
        if s == 0:
            samples.append(smp.assign(dataset=name))
    table = pd.DataFrame(rows)
    smp = pd.concat(samples, ignore_index=True)[["dataset", "method", "members", "size", *ATTRIBUTES]]
    validate_table(smp, "relash.samples", samples_suite)
    per_seed = per_seed_checks(table)
    sizes = {d: {s: int(((hyperlinks.dataset == d) & (hyperlinks.split == s)).sum()) for s in ("train", "val", "test")}
             for d in hyperlinks.dataset.unique()}
    write_parquet(smp, paths.samples)
    write_json({"seeds": list(range(t.n_seeds)), "per_seed": per_seed, "rows": table.to_dict(orient="records"),
                "split_sizes": sizes}, paths.evaluation)
    return {k: float(np.mean(v)) for k, v in per_seed.items()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
