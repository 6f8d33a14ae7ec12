"""Step ``evaluate``: Fréchet distance and precision/recall of samples at every checkpoint; temperature sweep."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import atomic_path, read_json, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.purrception.config import PAPER, EvaluateInputs, load_evaluate
from stages.purrception.expectations import fid_curve_suite
from stages.purrception.flow_matching import flow_codebook, load_generator, sample_codes
from stages.purrception.io import read_images
from stages.purrception.metrics import FeatureNet, embed_all, frechet_distance, load_classifier_model, precision_recall
from stages.purrception.vq import VQVAE, load_tokenizer_model, tokenize


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    tokenizer: Path = inp("VQ-VAE folder")
    classifier: Path = inp("feature-net folder")
    generators: Path = inp("checkpoints of every method and seed")
    evaluation: Path = out("floors, settings and counts (JSON)")
    fid_curves: Path = out("FID / precision / recall per method, seed, step, temperature (Parquet)")
    samples: Path = out("uint8 sample grid (rows: real, reconstruction, each method), .npy")


@torch.inference_mode()
def generate_images(model: Any, vq: VQVAE, codebook: torch.Tensor, grid: int, n: int, steps: int, eps: float,
                    temperature: float, seed: int, batch: int) -> torch.Tensor:
    """n decoded samples (n, H, W) in [0, 1]; the noise stream depends only on ``seed``."""
    gen = torch.Generator().manual_seed(seed)
    out_ = []
    for i in range(0, n, batch):
        codes = sample_codes(model, codebook, min(batch, n - i), steps, eps, temperature, gen)
        out_.append(vq.decode_codes(codes.view(-1, grid, grid)))
    return torch.cat(out_)


def score(net: FeatureNet, reference: np.ndarray, images: torch.Tensor, k: int) -> dict[str, float]:
    """Fréchet distance and k-NN precision/recall of images against the reference features."""
    feats = embed_all(net, images)
    precision, recall = precision_recall(reference, feats, k)
    return {"fid": frechet_distance(reference, feats), "precision": precision, "recall": recall}


def to_uint8(images: torch.Tensor) -> np.ndarray:
    """[0, 1] floats → uint8 pixels."""
    return (images.clamp(0, 1) * 255).round().to(torch.uint8).numpy()


def run(cfg: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Score every checkpoint at τ = 1, the final Purrception checkpoints at every τ, and the floors."""
    ev = cfg.evaluate
    data = read_images(paths.images, paths.index)
    train_x, test_x = data["train"][0], data["test"][0]
    if ev.n_reference > len(test_x) or ev.n_samples > len(train_x):
        raise ValueError(f"{PAPER}.evaluate: n_reference ≤ {len(test_x)} test and n_samples ≤ {len(train_x)} "
                         "train images are needed")
    net = load_classifier_model(paths.classifier)
    vq, tok = load_tokenizer_model(paths.tokenizer)
    codebook, _ = flow_codebook(paths.tokenizer)
    manifest = read_json(Path(paths.generators) / "manifest.json")
    grid, k = tok["grid"], ev.knn_k
    reference = embed_all(net, test_x[:ev.n_reference])
    real = train_x[:ev.n_samples]
    _, recon = tokenize(vq, real)
    floors = {"real_train_images": score(net, reference, real, k),
              "vq_reconstructions": score(net, reference, recon, k)}

    rows, grids = [], {}
    final = manifest["checkpoints"][-1]
    jobs = [(m, s, step, 1.0) for m in manifest["methods"] for s in range(manifest["n_seeds"])
            for step in manifest["checkpoints"]]
    jobs += [("purrception", s, final, tau) for s in range(manifest["n_seeds"])
             for tau in ev.temperatures if tau != 1.0]
    for method, s, step, tau in tqdm(jobs, desc="sample and score", unit="ckpt"):
        model = load_generator(paths.generators, method, s, step)
        images = generate_images(model, vq, codebook, grid, ev.n_samples, ev.sampling_steps, cfg.t_eps, tau,
                                 derive_seed(ctx.seed, PAPER, "sample", s) % 2**63, ev.batch_size)
        rows.append({"method": method, "seed_index": s, "step": step, "temperature": tau,
                     **score(net, reference, images, k)})
        if s == 0 and step == final and tau == 1.0:
            grids[method] = to_uint8(images[:ev.grid_samples])
    curves = pd.DataFrame(rows)
    validate_table(curves, f"{PAPER}.fid_curves", fid_curve_suite(len(curves)))
    sample_grid = np.stack([to_uint8(real[:ev.grid_samples]), to_uint8(recon[:ev.grid_samples]),
                            *[grids[m] for m in manifest["methods"]]])
    write_parquet(curves, paths.fid_curves)
    with atomic_path(paths.samples) as tmp, open(tmp, "wb") as fh:
        np.save(fh, sample_grid, allow_pickle=False)
    write_json({"floors": floors, "methods": manifest["methods"], "n_seeds": manifest["n_seeds"],
                "checkpoints": manifest["checkpoints"], "temperatures": ev.temperatures,
                "n_samples": ev.n_samples, "n_reference": ev.n_reference, "sampling_steps": ev.sampling_steps,
                "knn_k": k, "t_eps": cfg.t_eps, "grid_rows": ["real", "vq reconstruction", *manifest["methods"]],
                "model": {k_: manifest[k_] for k_ in ("d_model", "n_layers", "n_heads", "seq_len", "codebook_size",
                                                      "code_dim")}},
               paths.evaluation)
    last = curves[(curves.step == final) & (curves.temperature == 1.0)].groupby("method").fid.mean()
    return {"final_fid": last.to_dict()}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
