"""Step ``evaluate``: Fréchet distance and precision/recall of samples at every checkpoint; temperature sweep.

Purrception is scored with both of its samplers (stochastic: codes drawn from the posterior; deterministic:
posterior-mean ODE with a final argmax) on the same noise stream as every other method of that seed. A known-bad
generator, codes drawn independently per position from the train set's marginals, is scored beside them.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.image_metrics import FeatureNet, embed_all, frechet_distance, load_feature_net, precision_recall
from stages.core.io import atomic_path, read_json, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.workers import map_runs
from stages.purrception.config import PAPER, EvaluateConfig, EvaluateInputs, load_evaluate
from stages.purrception.expectations import fid_curve_suite
from stages.purrception.flow_matching import flow_codebook, load_generator, sample_codes
from stages.purrception.io import read_codes, read_images
from stages.purrception.vq import VQVAE, load_tokenizer_model, tokenize


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    tokenizer: Path = inp("VQ-VAE folder")
    codes: Path = inp("code grids (the train marginals of the known-bad generator)")
    classifier: Path = inp("feature-net folder")
    generators: Path = inp("checkpoints of every method and seed")
    evaluation: Path = out("floors, the known-bad generator per seed, settings and counts (JSON)")
    fid_curves: Path = out("FID / precision / recall per method, sampler, seed, step, temperature (Parquet)")
    samples: Path = out("uint8 sample grid (rows: real, reconstruction, each method), .npy")


# (method, sampler) pairs scored at every checkpoint: Purrception both ways, every other method by its own sampler
SAMPLERS = {"purrception": ("stochastic", "deterministic"), "cfm_velocity": ("deterministic",),
            "cfm_endpoint": ("deterministic",), "discrete_fm": ("stochastic",)}


def arms(methods: list[str]) -> list[tuple[str, str]]:
    """The (method, sampler) pairs scored for the trained methods, in the order of ``methods``."""
    return [(m, smp) for m in methods for smp in SAMPLERS[m]]


@torch.inference_mode()
def generate_images(model: Any, vq: VQVAE, codebook: torch.Tensor, grid: int, n: int, steps: int, eps: float,
                    temperature: float, seed: int, batch: int, stochastic: bool) -> torch.Tensor:
    """n decoded samples (n, H, W) in [0, 1]; the noise stream depends only on ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    out_ = []
    for i in range(0, n, batch):
        codes = sample_codes(model, codebook, min(batch, n - i), steps, eps, temperature, gen, stochastic)
        out_.append(vq.decode_codes(codes.view(-1, grid, grid)))
    return torch.cat(out_)


def marginal_codes(train_codes: torch.Tensor, codebook_size: int, n: int, seed: int) -> torch.Tensor:
    """n grids whose positions are drawn independently from the train codes' per-position frequencies."""
    counts = torch.stack([torch.bincount(col, minlength=codebook_size) for col in train_codes.T]).double()
    probs = counts / counts.sum(-1, keepdim=True)
    return torch.multinomial(probs, n, replacement=True, generator=torch.Generator().manual_seed(seed)).T


def score(net: FeatureNet, reference: np.ndarray, images: torch.Tensor, k: int) -> dict[str, float]:
    """Fréchet distance and k-NN precision/recall of images against the reference features."""
    feats = embed_all(net, images)
    precision, recall = precision_recall(reference, feats, k)
    return {"fid": frechet_distance(reference, feats), "precision": precision, "recall": recall}


def to_uint8(images: torch.Tensor) -> np.ndarray:
    """[0, 1] floats → uint8 pixels."""
    return (images.clamp(0, 1) * 255).round().to(torch.uint8).numpy()


def sample_seed(seed: int, s: int) -> int:
    """The noise stream of seed index ``s``: every method, sampler, checkpoint and τ of that seed share it."""
    return derive_seed(seed, PAPER, "sample", s) % 2**63


@dataclass(frozen=True)
class Shared:
    """What every scoring run reads: settings, the generators' folder, the decoder, the feature net and the
    reference features (embedded once), the base seed."""

    ev: EvaluateConfig
    t_eps: float
    generators: Path
    vq: VQVAE
    codebook: torch.Tensor
    grid: int
    net: FeatureNet
    reference: np.ndarray
    seed: int


def score_run(job: tuple[str, str, int, int, float], sh: Shared) -> tuple[dict[str, float], np.ndarray]:
    """One (method, sampler, seed index, checkpoint, τ): its scores and its first ``grid_samples`` images
    (uint8); the noise comes from the job's seed index alone."""
    method, smp, s, step, tau = job
    ev = sh.ev
    model = load_generator(sh.generators, method, s, step)
    images = generate_images(model, sh.vq, sh.codebook, sh.grid, ev.n_samples, ev.sampling_steps, sh.t_eps, tau,
                             sample_seed(sh.seed, s), ev.batch_size, smp == "stochastic")
    return score(sh.net, sh.reference, images, ev.knn_k), to_uint8(images[:ev.grid_samples])


def shared_inputs(cfg: EvaluateInputs, paths: Paths, seed: int, test_x: torch.Tensor) -> Shared:
    """The trained decoder and feature net, the scaled codebook and the reference features of the test images."""
    net = load_feature_net(paths.classifier)
    vq, tok = load_tokenizer_model(paths.tokenizer)
    codebook, _ = flow_codebook(paths.tokenizer)
    reference = embed_all(net, test_x[:cfg.evaluate.n_reference])
    return Shared(cfg.evaluate, cfg.t_eps, Path(paths.generators), vq, codebook, tok["grid"], net, reference, seed)


def jobs_of(manifest: dict[str, Any], temperatures: list[float]) -> list[tuple[str, str, int, int, float]]:
    """Every arm × seed × checkpoint at τ = 1, then the final Purrception checkpoints at the other τ."""
    seeds, final = range(manifest["n_seeds"]), manifest["checkpoints"][-1]
    jobs = [(m, smp, s, step, 1.0) for m, smp in arms(manifest["methods"]) for s in seeds
            for step in manifest["checkpoints"]]
    return jobs + [("purrception", smp, s, final, tau) for smp in SAMPLERS["purrception"] for s in seeds
                   for tau in temperatures if tau != 1.0]


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every checkpoint at τ = 1, the final Purrception checkpoints at every τ, the floors, the known-bad;
    the sampling runs go over ``threads / max_threads`` processes."""
    ev = cfg.evaluate
    cap_threads(ev.max_threads)
    data = read_images(paths.images, paths.index)
    train_x, test_x = data["train"][0], data["test"][0]
    if ev.n_reference > len(test_x) or ev.n_samples > len(train_x):
        raise ValueError(f"{PAPER}.evaluate: n_reference ≤ {len(test_x)} test and n_samples ≤ {len(train_x)} "
                         "train images are needed")
    sh = shared_inputs(cfg, paths, ctx.seed, test_x)
    net, vq, reference, grid, k = sh.net, sh.vq, sh.reference, sh.grid, ev.knn_k
    manifest = read_json(Path(paths.generators) / "manifest.json")
    codebook_size = len(sh.codebook)
    train_codes = read_codes(paths.codes, codebook_size, grid * grid)
    real = train_x[:ev.n_samples]
    _, recon = tokenize(vq, real)
    floors = {"real_train_images": score(net, reference, real, k),
              "vq_reconstructions": score(net, reference, recon, k)}

    seeds = range(manifest["n_seeds"])
    known_bad = [score(net, reference, vq.decode_codes(
        marginal_codes(train_codes, codebook_size, ev.n_samples, sample_seed(ctx.seed, s)).view(-1, grid, grid)), k)
        for s in seeds]

    final = manifest["checkpoints"][-1]
    pairs = arms(manifest["methods"])
    jobs = jobs_of(manifest, ev.temperatures)
    results = map_runs(score_run, jobs, sh, threads=ctx.threads, max_threads=ev.max_threads,
                       desc="sample and score", unit="ckpt")
    rows, grids = [], {}
    for (method, smp, s, step, tau), (scores, first) in zip(jobs, results, strict=True):
        rows.append({"method": method, "sampler": smp, "seed_index": s, "step": step, "temperature": tau, **scores})
        if s == 0 and step == final and tau == 1.0:
            grids[(method, smp)] = first
    curves = pd.DataFrame(rows)
    validate_table(curves, f"{PAPER}.fid_curves", fid_curve_suite(len(curves)))
    sample_grid = np.stack([to_uint8(real[:ev.grid_samples]), to_uint8(recon[:ev.grid_samples]),
                            *[grids[pair] for pair in pairs]])
    write_parquet(curves, paths.fid_curves)
    with atomic_path(paths.samples) as tmp, open(tmp, "wb") as fh:
        np.save(fh, sample_grid, allow_pickle=False)
    write_json({"floors": floors, "known_bad": known_bad, "methods": manifest["methods"],
                "arms": [list(pair) for pair in pairs], "n_seeds": manifest["n_seeds"],
                "checkpoints": manifest["checkpoints"], "temperatures": ev.temperatures,
                "n_samples": ev.n_samples, "n_reference": ev.n_reference, "sampling_steps": ev.sampling_steps,
                "knn_k": k, "t_eps": cfg.t_eps,
                "grid_rows": ["real", "vq reconstruction", *[f"{m} ({smp})" for m, smp in pairs]],
                "model": {k_: manifest[k_] for k_ in ("d_model", "n_layers", "n_heads", "seq_len", "codebook_size",
                                                      "code_dim", "n_params", "z_loss_weight")}},
               paths.evaluation, finite=True)
    last = curves[(curves.step == final) & (curves.temperature == 1.0)].groupby(["method", "sampler"]).fid.mean()
    return {"final_fid": {f"{m} ({smp})": v for (m, smp), v in last.items()}}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
