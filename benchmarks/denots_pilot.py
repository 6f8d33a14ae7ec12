"""Pilot for the denots training budget (issue 37): a learning-rate grid and a step cap sized so that the
chosen lr lies inside the grid and early stopping, not the cap, ends most runs.

Pilot seeds are separate from the verdict seeds (another base seed), and only the validation split is
scored. Usage: PYTHONPATH=. python benchmarks/denots_pilot.py OUT.json [--lrs 0.003 0.01 0.03] [--cap 400]
"""

from __future__ import annotations

import argparse
import json
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from stages.core.io import load_safetensors
from stages.denots.config import load_train
from stages.denots.evaluate import score_split
from stages.denots.fitting import n_workers, train_all
from stages.denots.grid import RunSpec, build_model
from stages.denots.io import load_tasks
from stages.denots.neural_cde import base_solver

PILOT_SEED = 1000  # the verdict runs use the global seed (0)
CONFIGS = ["gru_delta@1", "diagonal_ssm@1", "neural_rde@1", "neural_cde@1", "anti_feedback@1", "anti_feedback@30",
           "strict_feedback@30"]


def parse(text: str, cfg) -> RunSpec:
    """"[dataset:]name@D[:rtol]" → the run (pendulum by default; rtol other than the profile's = tolerance sweep)."""
    dataset, _, rest = text.rpartition(":") if text.count(":") == 2 or text.startswith(("pendulum:", "vowels:")) \
        else ("pendulum", "", text)
    if rest.count(":"):
        rest, rtol_text = rest.split(":")
    else:
        rtol_text = ""
    if ":" in dataset:
        dataset, rest_head = dataset.split(":")
        rest, rtol_text = rest_head, rest
    name, d = rest.split("@")
    fields = getattr(cfg, dataset or "pendulum").fields
    is_field = name in fields or name in cfg.pendulum.fields
    rtol, atol = cfg.solver.rtol, cfg.solver.atol
    group = "horizon" if is_field else "baseline"
    if rtol_text:
        tol = next(t for t in cfg.pendulum.tolerance_sweep.tolerances if f"{t.rtol:g}" == rtol_text)
        rtol, atol, group = tol.rtol, tol.atol, "tolerance"
    return RunSpec(dataset or "pendulum", "denots" if is_field else name, name if is_field else "", float(d), rtol,
                   atol, 0, group)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("out", type=Path)
    ap.add_argument("--lrs", type=float, nargs="+", default=[0.003, 0.01, 0.03])
    ap.add_argument("--cap", type=int, default=400)
    ap.add_argument("--eval-every", type=int, default=10)
    ap.add_argument("--patience", type=int, default=5)
    ap.add_argument("--configs", nargs="*", default=None, help="name@D, default: the pilot set")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--folder", type=Path, default=Path("/tmp/denots-pilot-models"))
    args = ap.parse_args()
    cfg = load_train(Path("params.yaml"))
    cfg = cfg.model_copy(update={
        "lrs": args.lrs, "trainer": cfg.trainer.model_copy(update={"max_steps": args.cap}),
        "early_stopping": cfg.early_stopping.model_copy(update={"eval_every": args.eval_every,
                                                                "patience": args.patience})})
    tasks = load_tasks(Path("data/denots/datasets"))
    specs = [replace(parse(c, cfg), lr=lr) for c in (args.configs or CONFIGS) for lr in args.lrs]
    args.folder.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    out = train_all(specs, tasks, {}, cfg, PILOT_SEED, args.folder, min(args.workers, n_workers(2, 1)))
    wall = time.perf_counter() - start
    rows = []
    for spec, (row, _, _, _, (wall_s, cpu_s)) in zip(specs, out, strict=True):
        val_r2 = float("nan")
        task = tasks[spec.dataset]
        if not row["diverged"]:
            model = build_model(spec, task, cfg)
            model.load_state_dict(load_safetensors(args.folder / f"{spec.run_id}.safetensors"))
            model.eval()
            val_r2 = score_split(model, spec, task, task.splits["val"], spec.solver(base_solver(cfg)), 128)[0]
        keep = ("run_id", "config_id", "lr", "steps", "step_cap", "best_step", "best_val_loss", "diverged", "reason")
        rows.append({k: row[k] for k in keep} | {"val_r2": val_r2, "wall_s": wall_s, "cpu_s": cpu_s})
    chosen = []
    for cid in dict.fromkeys(r["config_id"] for r in rows):
        g = [r for r in rows if r["config_id"] == cid]
        best = min(g, key=lambda r: r["best_val_loss"] if np.isfinite(r["best_val_loss"]) else np.inf)
        chosen.append({"config": cid, "lr": best["lr"], "lr_at_edge": best["lr"] in (min(args.lrs), max(args.lrs)),
                       "best_step": best["best_step"], "steps": best["steps"],
                       "stopped_by_cap": best["steps"] >= args.cap, "val_r2": best["val_r2"]})
    summary = {"lrs": args.lrs, "cap": args.cap, "eval_every": args.eval_every, "patience": args.patience,
               "seed": PILOT_SEED, "wall_s": wall, "runs": rows, "chosen": chosen,
               "n_lr_at_edge": sum(c["lr_at_edge"] for c in chosen),
               "n_stopped_by_cap": sum(c["stopped_by_cap"] for c in chosen)}
    args.out.write_text(json.dumps(summary, indent=1))
    for c in chosen:
        print(c)
    print("wall", round(wall), "s; runs", len(rows), "; CPU s per run", round(np.mean([r["cpu_s"] for r in rows]), 1))


if __name__ == "__main__":
    main()
