"""Throughput of the matrix_denoising pieces at the default size, to size the profiles.

Writes ``reports/bench/matrix_denoising.json``: RGD steps per second on a p × n matrix
with k initial conditions as columns, seconds per instance at the default horizon,
and the cost of one closed-form theory curve.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import numpy as np

import stages  # noqa: F401  (offline switches)
from benchmarks.common import machine_info
from stages.core.config import load_section
from stages.core.io import write_json
from stages.core.seeding import apply_threads
from stages.matrix_denoising.config import DataConfig, TrainConfig
from stages.matrix_denoising.dynamics import rgd_step
from stages.matrix_denoising.spiked_model import sample_spiked_matrix
from stages.matrix_denoising.theory import overlap_trajectories


def _best_of(fn, repeats: int = 3) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--params", type=Path, default=Path("params.yaml"))
    parser.add_argument("--out", type=Path, default=Path("reports/bench/matrix_denoising.json"))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    apply_threads(args.threads)
    data = load_section(DataConfig, "matrix_denoising.data", args.params, profile="default")
    train = load_section(TrainConfig, "matrix_denoising.train", args.params, profile="default")
    x, _, _ = sample_spiked_matrix(data.p, data.n, 1.5, seed=0)
    results = {}
    for k in (1, 4, 16):
        u = np.linalg.qr(np.random.default_rng(0).standard_normal((data.p, k)))[0]
        v = np.linalg.qr(np.random.default_rng(1).standard_normal((data.n, k)))[0]
        steps = 200
        sec = _best_of(lambda u=u, v=v, steps=steps: [rgd_step(x, u, v, train.step_size) for _ in range(steps)])
        results[f"rgd_steps_per_s_k{k}"] = steps / sec
    n_steps = round(train.horizon / train.step_size)
    results["seconds_per_instance_k4_default_horizon"] = n_steps / results["rgd_steps_per_s_k4"]
    t = np.linspace(0, train.horizon, 241)
    results["theory_curve_ms_241_points"] = 1000 * _best_of(lambda: overlap_trajectories(t, 0.75, 1.5, 0.3, 0.3))
    results["svd_seconds"] = _best_of(lambda: np.linalg.svd(x, full_matrices=False), repeats=2)
    write_json({"benchmark": "matrix_denoising", "p": data.p, "n": data.n, "threads": args.threads,
                "machine": machine_info(),
                "results": {k: round(v, 4) for k, v in results.items()}}, args.out)
    print(args.out.read_text())


if __name__ == "__main__":
    main()
