"""Training and estimator throughput of mtd_mirror_descent at the default size, to size the profiles.

Writes ``reports/bench/mtd_mirror_descent.json``: milliseconds per Adam step (forward + backward)
for each default model at the default batch and sequence length, the implied training time of
the default grid, and the cost of the estimators on the default test split.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np
import torch

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.core.config import load_section
from stages.core.io import write_json
from stages.core.seeding import apply_threads
from stages.mtd_mirror_descent.config import DataConfig, EvaluateConfig, TrainConfig
from stages.mtd_mirror_descent.mirror_descent import bayes_posterior_mean, mirror_descent
from stages.mtd_mirror_descent.models import build_model
from stages.mtd_mirror_descent.mtd import sample_sequences, transition_matrix


def _ms_per_step(model: torch.nn.Module, x: torch.Tensor, steps: int = 20) -> float:
    opt = torch.optim.Adam(model.parameters(), 1e-3)
    for warm in (True, False):
        start = time.perf_counter()
        for _ in range(3 if warm else steps):
            logp = model(x)
            loss = -logp[:, :-1].gather(-1, x[:, 1:, None]).mean()
            opt.zero_grad()
            loss.backward()
            opt.step()
    return 1000 * (time.perf_counter() - start) / steps


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--out", type=Path, default=Path("reports/bench/mtd_mirror_descent.json"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    apply_threads(args.threads)
    data = load_section(DataConfig, "mtd_mirror_descent.data", args.params, profile="default")
    train = load_section(TrainConfig, "mtd_mirror_descent.train", args.params, profile="default")
    ev = load_section(EvaluateConfig, "mtd_mirror_descent.evaluate", args.params, profile="default")
    gen = np.random.default_rng(0)
    pi = transition_matrix(data.q, data.pi_concentration, data.pi_floor, gen)
    tokens, _, _ = sample_sequences(pi, data.m, data.seq_len, data.n_test, data.dirichlet_alpha, gen)
    x = torch.as_tensor(tokens[: train.batch_size])
    results = {f"ms_per_step_{s.name}": _ms_per_step(build_model(s, data.q, data.m, data.seq_len, 0), x)
               for s in train.models}
    per_seed = sum(results.values()) * train.trainer.max_steps / 1000
    results["train_grid_seconds_without_overhead"] = per_seed * train.n_seeds
    start = time.perf_counter()
    mirror_descent(pi, tokens, data.m, 3.0, max(ev.md_steps))
    results["md_seconds_test_split"] = time.perf_counter() - start
    start = time.perf_counter()
    bayes_posterior_mean(pi, tokens[:, :128], data.m, data.dirichlet_alpha, ev.bayes_samples, gen)
    results["bayes_seconds_test_split_T128"] = time.perf_counter() - start
    write_json({"benchmark": "mtd_mirror_descent", "batch_size": train.batch_size, "seq_len": data.seq_len,
                "threads": args.threads, "machine": machine_info(),
                "results": {k: round(v, 4) for k, v in results.items()}}, args.out)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
