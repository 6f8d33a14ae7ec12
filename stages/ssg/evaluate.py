"""Step ``evaluate``: tune every arm's knob on validation, then Fréchet distance, precision/recall, per-scale
high-frequency share and counted cost of every arm on the test split, per seed."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F
from torch.utils.flop_counter import FlopCounterMode

from stages.core.gx import validate_table
from stages.core.image_metrics import FeatureNet, embed_all, frechet_distance, load_feature_net, precision_recall
from stages.core.io import atomic_path, read_json, write_json, write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.workers import map_runs
from stages.ssg.config import PAPER, EvaluateConfig, EvaluateInputs, load_evaluate
from stages.ssg.expectations import results_suite
from stages.ssg.guidance import Arm, Cost, sample, scale_high_frequency_share
from stages.ssg.io import N_CLASSES, read_images, read_tokens
from stages.ssg.multiscale_vq import MultiScaleVQ, load_vq, split_codes, tokenize
from stages.ssg.var import NextScaleTransformer, load_var

COST_BATCH = 50  # images per counted batch: every count here grows linearly with the batch
ARMS = ["none", "ssg_dse", "ssg_bilinear", "ssg_nearest", "temperature", "marginal", "reconstruction"]


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    tokenizer: Path = inp("tokenizer folder")
    tokens: Path = inp("token sequences of every image")
    var: Path = inp("folder of the trained transformers")
    classifier: Path = inp("purrception's Fashion-MNIST feature net (the Fréchet distance's features)")
    results: Path = out("FD, precision, recall per seed, split, arm and knob (Parquet)")
    evaluation: Path = out("chosen knobs, per-scale high-frequency shares, counted cost (JSON)")
    samples: Path = out("uint8 array (arms, grid_samples, S, S) of test samples of seed 0 (.npy)")


class Scorer:
    """Features of the feature net at its own image size; FD and k-NN precision/recall against a real set."""

    def __init__(self, net: FeatureNet, size: int, knn_k: int) -> None:
        self.net, self.size, self.knn_k = net, size, knn_k

    def features(self, images: torch.Tensor) -> np.ndarray:
        """Features of images (n, S, S) in [0, 1], resized to the feature net's size if needed."""
        if images.shape[-1] != self.size:
            images = F.interpolate(images[:, None], size=(self.size, self.size), mode="bilinear",
                                   align_corners=False)[:, 0]
        return embed_all(self.net, images)

    def score(self, images: torch.Tensor, real: np.ndarray) -> dict[str, float]:
        """FD, precision and recall of generated images against real features."""
        fake = self.features(images)
        precision, recall = precision_recall(real, fake, self.knn_k)
        return {"fd": frechet_distance(fake, real), "precision": precision, "recall": recall}


def generate(model: NextScaleTransformer, vq: MultiScaleVQ, arm: Arm, cfg: EvaluateConfig, n: int,
             seed: int) -> tuple[torch.Tensor, list[torch.Tensor]]:
    """n images (labels cycling over the classes) and their code grids; the same seed gives common random numbers."""
    gen = torch.Generator().manual_seed(seed)
    labels = torch.arange(n) % N_CLASSES
    codebook = vq.codebook.weight.detach()
    images, codes = [], []
    for i in range(0, n, cfg.batch_size):
        c = sample(model, codebook, labels[i:i + cfg.batch_size], arm, cfg.cfg_scale, cfg.top_k, gen)
        codes.append(c)
        with torch.inference_mode():
            images.append(vq.decode_codes(c))
    return torch.cat(images), [torch.cat(parts) for parts in zip(*codes, strict=True)]


def marginal_codes(train_tokens: torch.Tensor, codebook_size: int, n: int, scales: list[int],
                   seed: int) -> list[torch.Tensor]:
    """The known-bad generator: every position's code drawn independently from its marginal over the train set."""
    counts = torch.stack([torch.bincount(col, minlength=codebook_size) for col in train_tokens.T]).double()
    gen = torch.Generator().manual_seed(seed)
    tokens = torch.multinomial(counts / counts.sum(1, keepdim=True), n, replacement=True, generator=gen).T
    return split_codes(tokens, scales)


def sampling_cost(model: NextScaleTransformer, vq: MultiScaleVQ, arm: Arm, cfg: EvaluateConfig) -> dict[str, Any]:
    """FLOPs (torch's counter: matrix products, attention) and counted forward rows per image, on one small batch."""
    cost, n = Cost(), min(cfg.batch_size, COST_BATCH)
    labels = torch.arange(n) % N_CLASSES
    with FlopCounterMode(display=False) as counter:
        sample(model, vq.codebook.weight.detach(), labels, arm, cfg.cfg_scale, cfg.top_k,
               torch.Generator().manual_seed(0), cost)
    return {"flops_per_image": counter.get_total_flops() / n,
            "forward_rows_per_image": cost.forward_rows / n, "transformer_calls": cost.calls}


def validation_arms(cfg: EvaluateConfig) -> list[Arm]:
    """The validation grid: no SSG; every prior at every β > 0; the temperature baseline at every T ≠ 1."""
    arms = [Arm("none")]
    arms += [Arm(f"ssg_{p}", p, b) for p in cfg.priors for b in cfg.beta_grid if b > 0]
    arms += [Arm("temperature", temperature=t) for t in cfg.temperature_grid if t != 1.0]
    return arms


def chosen_arms(cfg: EvaluateConfig, val: pd.DataFrame) -> list[Arm]:
    """Per prior the β, and for the baseline the T, with the lowest validation FD (β = 0 / T = 1 is 'none')."""
    none_fd = float(val[val.arm == "none"].fd.iloc[0])
    arms = [Arm("none")]
    for p in cfg.priors:
        part = val[val.arm == f"ssg_{p}"]
        best = part.loc[part.fd.idxmin()]
        arms.append(Arm(f"ssg_{p}", p, float(best.beta)) if best.fd < none_fd else Arm(f"ssg_{p}", p, 0.0))
    part = val[val.arm == "temperature"]
    best = part.loc[part.fd.idxmin()]
    arms.append(Arm("temperature", temperature=float(best.temperature) if best.fd < none_fd else 1.0))
    return arms


def row(seed_index: int, split: str, arm: Arm, scores: dict[str, float]) -> dict[str, Any]:
    """One results row."""
    return {"seed_index": seed_index, "split": split, "arm": arm.name, "prior": arm.prior or "none",
            "beta": arm.beta, "temperature": arm.temperature, **scores}


@dataclass(frozen=True)
class Shared:
    """What every run reads: the config, the tokenizer, the transformers' folder, the scorer with the real features,
    the train tokens (the marginal generator) and the base seed."""

    cfg: EvaluateConfig
    vq: MultiScaleVQ
    var: Path
    scorer: Scorer
    real: dict[str, np.ndarray]
    train_tokens: torch.Tensor
    codebook_size: int
    scales: list[int]
    seed: int


@dataclass(frozen=True)
class FinalRun:
    """One (seed, arm) on the test split: scores, per-scale high-frequency shares, counted cost (None for the
    marginal generator) and the first ``grid_samples`` images."""

    scores: dict[str, float]
    high_frequency_share: list[float]
    cost: dict[str, Any] | None
    grid: torch.Tensor


MARGINAL = Arm("marginal")


def validation_run(job: tuple[int, Arm], sh: Shared) -> dict[str, float]:
    """One (seed index, arm) of the validation grid, its random numbers from the seed alone: FD, precision, recall."""
    s, arm = job
    model, _ = load_var(sh.var, s)
    images, _ = generate(model, sh.vq, arm, sh.cfg, sh.cfg.n_val_samples, derive_seed(sh.seed, PAPER, "val", s))
    return sh.scorer.score(images, sh.real["val"])


def final_run(job: tuple[int, Arm], sh: Shared) -> FinalRun:
    """One (seed index, chosen arm) on the test split, or the seed's marginal generator (``MARGINAL``)."""
    s, arm = job
    cfg, codebook = sh.cfg, sh.vq.codebook.weight.detach()
    if arm == MARGINAL:
        codes = marginal_codes(sh.train_tokens, sh.codebook_size, cfg.n_test_samples, sh.scales,
                               derive_seed(sh.seed, PAPER, "marginal", s))
        with torch.inference_mode():
            images = torch.cat([sh.vq.decode_codes([c[i:i + 500] for c in codes])
                                for i in range(0, len(codes[0]), 500)])
        cost = None
    else:
        model, _ = load_var(sh.var, s)
        images, codes = generate(model, sh.vq, arm, cfg, cfg.n_test_samples, derive_seed(sh.seed, PAPER, "test", s))
        # cost at the largest β of the grid, so SSG's work is counted even where validation chose β = 0
        costed = Arm(arm.name, arm.prior, max(cfg.beta_grid), arm.temperature) if arm.prior else arm
        cost = sampling_cost(model, sh.vq, costed, cfg)
    return FinalRun(sh.scorer.score(images, sh.real["test"]), scale_high_frequency_share(codebook, codes), cost,
                   images[:cfg.grid_samples].clone())


def run(inputs: EvaluateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Validation grid → chosen knobs → test scores, per seed (each phase's seed × arm runs over
    ``threads / max_threads`` processes); the known-bad and the reconstruction references."""
    cfg = inputs.evaluate
    cap_threads(cfg.max_threads)
    data = read_images(paths.images, paths.index)
    vq, manifest = load_vq(paths.tokenizer)
    scales = manifest["scales"]
    net = load_feature_net(paths.classifier)
    scorer = Scorer(net, int(read_json(Path(paths.classifier) / "manifest.json")["image_size"]), cfg.knn_k)
    real = {split: scorer.features(data[split][0]) for split in ("val", "test")}
    train_tokens, _ = read_tokens(paths.tokens, manifest["codebook_size"], manifest["seq_len"], "train")
    test_tokens, _ = read_tokens(paths.tokens, manifest["codebook_size"], manifest["seq_len"], "test")
    codebook = vq.codebook.weight.detach()
    _, recon = tokenize(vq, data["test"][0])
    rows = [row(-1, "test", Arm("reconstruction"), scorer.score(recon, real["test"]))]
    shared = Shared(cfg, vq, Path(paths.var), scorer, real, train_tokens, manifest["codebook_size"], scales, ctx.seed)
    seed_indices = range(inputs.n_seeds)
    val_jobs = [(s, arm) for s in seed_indices for arm in validation_arms(cfg)]
    val_scores = map_runs(validation_run, val_jobs, shared, threads=ctx.threads, max_threads=cfg.max_threads,
                          desc="ssg validation grid (seed × arm)", unit="arm")
    val_rows: dict[int, list[dict[str, Any]]] = {s: [] for s in seed_indices}
    for (s, arm), scores in zip(val_jobs, val_scores, strict=True):
        val_rows[s].append(row(s, "val", arm, scores))
    chosen = {s: chosen_arms(cfg, pd.DataFrame(val_rows[s])) for s in seed_indices}
    test_jobs = [(s, arm) for s in seed_indices for arm in [*chosen[s], MARGINAL]]
    tested = dict(zip(test_jobs, map_runs(final_run, test_jobs, shared, threads=ctx.threads,
                                          max_threads=cfg.max_threads, desc="ssg test (seed × arm)", unit="arm"),
                      strict=True))
    cap_threads(cfg.max_threads)
    seeds, grid_images = [], []
    for s in seed_indices:
        rows += val_rows[s]
        arms = chosen[s]
        hf, cost = {}, {}
        for arm in arms:
            done = tested[(s, arm)]
            rows.append(row(s, "test", arm, done.scores))
            hf[arm.name], cost[arm.name] = done.high_frequency_share, done.cost
            if s == 0:
                grid_images.append(done.grid)
        bad = tested[(s, MARGINAL)]
        rows.append(row(s, "test", MARGINAL, bad.scores))
        hf["marginal"] = bad.high_frequency_share
        if s == 0:
            grid_images = [data["test"][0][:cfg.grid_samples], bad.grid, *grid_images]
        seeds.append({"seed_index": s, "chosen": {a.name: {"prior": a.prior, "beta": a.beta,
                                                            "temperature": a.temperature} for a in arms},
                      "high_frequency_share": hf, "cost": cost})
    results = pd.DataFrame(rows)
    validate_table(results, f"{PAPER}.results", results_suite(len(results), ARMS))
    real_hf = scale_high_frequency_share(codebook, split_codes(test_tokens, scales))
    evaluation = {"n_seeds": inputs.n_seeds, "scales": scales, "seeds": seeds, "real_high_frequency_share": real_hf,
                  "grid_rows": ["real", "marginal", *[a.name for a in arms]],
                  "n_val_samples": cfg.n_val_samples, "n_test_samples": cfg.n_test_samples,
                  "n_val_real": len(real["val"]), "n_test_real": len(real["test"]), "feature_size": scorer.size,
                  "validation_arms": len(validation_arms(cfg))}
    write_parquet(results, paths.results)
    write_json(evaluation, paths.evaluation, finite=True)
    with atomic_path(paths.samples) as tmp, open(tmp, "wb") as fh:
        np.save(fh, (torch.stack(grid_images) * 255).round().clamp(0, 255).to(torch.uint8).numpy(),
                allow_pickle=False)
    test = results[results.split == "test"]
    return {a: float(test[test.arm == a].fd.mean()) for a in ARMS}


main = Step(PAPER, "evaluate", run, load_evaluate, Paths)


if __name__ == "__main__":
    main()
