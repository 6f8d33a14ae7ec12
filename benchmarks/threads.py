"""Threads and the OpenMP wait policy on small and large torch work (why ``cap_threads`` exists and
why the wait policy is left alone).

Writes ``reports/bench/threads.json``: for each (OMP_WAIT_POLICY, threads) pair, measured in a fresh
subprocess (the policy is read when torch loads): a purrception training step (64-wide transformer,
batch 64), a 64×64 matmul, and one SmolLM2-135M forward pass on 160 tokens. Needs the SmolLM2
asset (``dvc repro assets-manifest``) for the last one; about a minute on 2 idle cores.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

from benchmarks.common import machine_info
from stages.core.io import write_json

PROBE = r"""
import json, os, sys, time
import torch
torch.set_num_threads(int(sys.argv[1]))
import stages  # offline switches
from stages.purrception.flow_matching import FlowTransformer, training_loss
torch.manual_seed(0)
m = FlowTransformer("purrception", 64, 8, 25, 64, 2, 4)
cb, codes = torch.randn(64, 8), torch.randint(0, 64, (64, 25))
opt = torch.optim.AdamW(m.parameters(), 1e-3)
def step():
    loss = training_loss(m, codes, cb, 1e-3, 1e-5); opt.zero_grad(); loss.backward(); opt.step()
def per_call(fn, n):
    for _ in range(3): fn()
    t = time.perf_counter()
    for _ in range(n): fn()
    return (time.perf_counter() - t) / n
x, w = torch.randn(64, 64), torch.randn(64, 64)
out = {"purrception_step_ms": 1e3 * per_call(step, 40), "matmul64_us": 1e6 * per_call(lambda: x @ w, 5000)}
model_dir = sys.argv[2]
if os.path.isdir(model_dir):
    from pathlib import Path
    from stages.assets.loaders import load_causal_lm
    lm, _ = load_causal_lm(Path(model_dir))
    ids = torch.randint(0, 1000, (1, 160))
    with torch.inference_mode():
        out["smollm2_forward_160_ms"] = 1e3 * per_call(lambda: lm(input_ids=ids), 10)
print(json.dumps(out))
"""


def probe(policy: str, threads: int, model: Path) -> dict[str, float]:
    """One measurement in a fresh interpreter with the given wait policy and thread count."""
    env = {**os.environ, "OMP_WAIT_POLICY": policy}
    res = subprocess.run([sys.executable, "-c", PROBE, str(threads), str(model)], env=env, capture_output=True,
                         text=True, check=True, timeout=600)
    return json.loads(res.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", type=Path, default=Path("models/assets/smollm2-135m"))
    ap.add_argument("--out", type=Path, default=Path("reports/bench/threads.json"))
    args = ap.parse_args()
    info = machine_info()
    results = {f"{policy.lower()}_{threads}_threads": probe(policy, threads, args.model)
               for policy in ("ACTIVE", "PASSIVE") for threads in (1, 2)}
    write_json({"machine": info, "results": results}, args.out)
    print(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
