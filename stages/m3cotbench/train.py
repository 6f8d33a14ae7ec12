"""Step ``train``: per seed, the direct and CoT image-to-text models; then every model's and reasoner's
outputs on the test scans (sample 0 greedy, samples 1.. at the sampling temperature). The (seed, model)
runs are independent and go over worker processes (stages/core/workers.py)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch
from torch.nn import functional as F
from tqdm import tqdm

from stages.core.gx import validate_table
from stages.core.io import save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed, rng
from stages.core.stage import StageContext, Step, inp, out
from stages.core.workers import in_worker, map_runs
from stages.m3cotbench.config import PAPER, TrainConfig, TrainInputs, load_train
from stages.m3cotbench.expectations import outputs_suite
from stages.m3cotbench.io import read_images, read_scenes, scene_of
from stages.m3cotbench.model import BOS, EOS, PAD, ImageToText, vocabulary
from stages.m3cotbench.reasoners import rule_based, shortcut, split_chain, tokens_to_text, unfaithful
from stages.m3cotbench.scene import TASKS, gold

TASK_LIST = list(TASKS)
MAX_LEN = 8  # six key steps, the answer, EOS
MODEL_KINDS = ("direct", "cot")  # the trained models, in their order in every output


@dataclass(frozen=True)
class Paths:
    scenes: Path = inp("scene table")
    images: Path = inp("the scans")
    models: Path = out("safetensors: the direct and CoT models' weights per seed")
    outputs: Path = out("one text per (seed, model, test scan, task, sample)")
    training: Path = out("JSON: per seed and model, the loss per epoch and greedy validation accuracy")


def targets(scenes: pd.DataFrame, cot: bool, vocab: list[str]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(scan rows, task ids, target tokens padded to MAX_LEN) for every (scan, task) of a scene table."""
    index = {t: i for i, t in enumerate(vocab)}
    rows, tasks, seqs = [], [], []
    for i, (_, r) in enumerate(scenes.iterrows()):
        s = scene_of(r)
        for k, task in enumerate(TASK_LIST):
            steps, answer = gold(s, task)
            seq = ([index[f"{a}={b}"] for a, b in steps] if cot else []) + [index[f"ans={answer}"], EOS]
            rows.append(i)
            tasks.append(k)
            seqs.append(seq + [PAD] * (MAX_LEN - len(seq)))
    return np.array(rows), np.array(tasks), np.array(seqs)


def train_model(cfg: TrainConfig, images: torch.Tensor, rows: np.ndarray, tasks: np.ndarray, seqs: np.ndarray,
                vocab_size: int, seed: int, desc: str, progress_bar: bool = True) -> tuple[ImageToText, list[float]]:
    """Teacher-forced cross-entropy training (Adam), batches drawn by a seeded permutation."""
    torch.manual_seed(seed)
    model = ImageToText(vocab_size, len(TASK_LIST), cfg.channels, cfg.hidden)
    opt = torch.optim.Adam(model.parameters(), lr=cfg.lr)
    gen = np.random.default_rng(seed)
    y = torch.from_numpy(seqs)
    x_in = torch.cat([torch.full((len(y), 1), BOS), y[:, :-1]], 1)
    losses = []
    n_tasks = len(TASK_LIST)  # items are scan-major: scan i holds items n_tasks * i .. n_tasks * i + n_tasks - 1
    scan_ids = rows[::n_tasks]
    for _ in tqdm(range(cfg.epochs), desc=desc, unit="epoch", disable=not progress_bar):
        perm, total = gen.permutation(len(scan_ids)), 0.0
        for b in range(0, len(perm), cfg.batch_size):
            scans = perm[b:b + cfg.batch_size]
            idx = torch.from_numpy((scans[:, None] * n_tasks + np.arange(n_tasks)).reshape(-1))
            logits = model(images[scan_ids[scans]], torch.from_numpy(tasks[idx]), x_in[idx],
                           torch.arange(len(scans)).repeat_interleave(n_tasks))
            loss = F.cross_entropy(logits.reshape(-1, vocab_size), y[idx].reshape(-1), ignore_index=PAD)
            opt.zero_grad()
            loss.backward()
            opt.step()
            total += float(loss) * len(idx)
        losses.append(total / len(y))
    return model.eval(), losses


def generate(model: ImageToText, images: torch.Tensor, rows: np.ndarray, tasks: np.ndarray, temperature: float,
             generator: torch.Generator | None) -> np.ndarray:
    """Generated tokens (n, MAX_LEN) for each (scan row, task)."""
    out_rows = []
    for b in range(0, len(rows), 512):
        out_rows.append(model.generate(images[rows[b:b + 512]], torch.from_numpy(tasks[b:b + 512]), MAX_LEN,
                                       temperature, generator).numpy())
    return np.concatenate(out_rows)


def greedy_accuracy(model: ImageToText, images: torch.Tensor, rows: np.ndarray, tasks: np.ndarray,
                    seqs: np.ndarray, vocab: list[str]) -> float:
    """Fraction of (scan, task) whose first generated answer token is the gold answer token."""
    gen_tok = generate(model, images, rows, tasks, 0.0, None)
    def first_answer(row: np.ndarray) -> int:
        hits = [t for t in row if vocab[t].startswith("ans=")]
        return hits[0] if hits else -1
    return float(np.mean([first_answer(g) == first_answer(s) for g, s in zip(gen_tok, seqs, strict=True)]))


@dataclass(frozen=True)
class Shared:
    """What every run reads: the config, the scans, the train/val/test scene tables, the vocabulary and the seed."""

    cfg: TrainConfig
    images: torch.Tensor
    train: pd.DataFrame
    val: pd.DataFrame
    test: pd.DataFrame
    vocab: list[str]
    seed: int


def model_run(job: tuple[int, str], sh: Shared) -> tuple[dict[str, Any], dict[str, torch.Tensor], list[list[str]]]:
    """One (seed index, model kind), seeded from the job alone: its training record, its weights and its texts
    on the test items (one list per sample)."""
    seed_index, kind = job
    c, images, vocab, test = sh.cfg, sh.images, sh.vocab, sh.test
    tr = targets(sh.train, kind == "cot", vocab)
    model, losses = train_model(c, images, sh.train.scan.to_numpy()[tr[0]], tr[1], tr[2], len(vocab),
                                derive_seed(sh.seed, PAPER, "train", kind, seed_index),
                                f"train {kind} seed {seed_index}", progress_bar=not in_worker())
    va = targets(sh.val, kind == "cot", vocab)
    training = {"seed_index": seed_index, "model": kind, "loss": losses,
                "val_accuracy": greedy_accuracy(model, images, sh.val.scan.to_numpy()[va[0]], va[1], va[2], vocab)}
    weights = {f"seed{seed_index}.{kind}.{k}": v.detach().clone() for k, v in model.state_dict().items()}
    te = targets(test, kind == "cot", vocab)
    scan_rows = test.scan.to_numpy()[te[0]]
    gen_t = torch.Generator().manual_seed(derive_seed(sh.seed, PAPER, "sample", kind, seed_index))
    texts = []
    for sample in range(c.n_samples + 1):
        toks = generate(model, images, scan_rows, te[1], 0.0 if sample == 0 else c.temperature, gen_t)
        g = rng(sh.seed, PAPER, "render", kind, seed_index, sample)
        texts.append([tokens_to_text(list(t), vocab, g) for t in toks])
    return training, weights, texts


def run(cfg: TrainInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train and generate per (seed, model) over ``threads / max_threads`` processes; the reasoners' texts and
    the shuffled-steps control per seed here; write every output text."""
    c = cfg.train
    scenes = read_scenes(paths.scenes)
    images = read_images(paths.images, len(scenes))
    vocab = vocabulary()
    split = {s: scenes[scenes.split == s] for s in ("train", "val", "test")}
    test = split["test"]
    test_scenes = [scene_of(r) for _, r in test.iterrows()]
    jobs = [(seed_index, kind) for seed_index in range(c.n_seeds) for kind in MODEL_KINDS]
    shared = Shared(c, images, split["train"], split["val"], test, vocab, ctx.seed)
    results = map_runs(model_run, jobs, shared, threads=ctx.threads, max_threads=c.max_threads,
                       desc="m3cotbench runs (seed × model)")
    by_job = dict(zip(jobs, results, strict=True))
    weights, training, records = {}, [], []
    items = [(i, k) for i in range(len(test)) for k in range(len(TASK_LIST))]
    for seed_index in range(c.n_seeds):
        texts: dict[str, list[list[str]]] = {}
        for kind in MODEL_KINDS:
            record, state, texts[kind] = by_job[seed_index, kind]
            training.append(record)
            weights.update(state)
        for name, fn in (("rule_based", rule_based), ("unfaithful", unfaithful), ("shortcut", shortcut)):
            texts[name] = []
            for sample in range(c.n_samples + 1):
                g = rng(ctx.seed, PAPER, name, seed_index, sample)
                texts[name].append([fn(test_scenes[i], TASK_LIST[k], g) for i, k in items])
        # cot_shuffled: the CoT model's own answers with the steps of another test scan's chain for the same task
        perm_gen = rng(ctx.seed, PAPER, "shuffle", seed_index)
        by_task = {k: [j for j, (_, kk) in enumerate(items) if kk == k] for k in range(len(TASK_LIST))}
        donor = np.arange(len(items))
        for idx in by_task.values():  # a cyclic shift of a random order: no item keeps its own steps
            order = np.array(idx)[perm_gen.permutation(len(idx))]
            donor[order] = np.roll(order, 1)
        texts["cot_shuffled"] = [[(split_chain(t[donor[j]])[0] + " " + split_chain(t[j])[1]).strip()
                                  for j in range(len(items))] for t in texts["cot"]]
        for name, samples in texts.items():
            for sample, col in enumerate(samples):
                records += [{"seed_index": seed_index, "model": name, "scan": int(test.scan.iloc[i]),
                             "task": TASK_LIST[k], "sample": sample, "text": col[j]}
                            for j, (i, k) in enumerate(items)]
    outputs = pd.DataFrame(records)
    validate_table(outputs, f"{PAPER}.outputs", outputs_suite(len(outputs)))
    write_json(training, paths.training, finite=True)
    save_safetensors(weights, paths.models)
    write_parquet(outputs, paths.outputs)
    return {"n_outputs": len(outputs), "val_accuracy": {f"{t['model']}{t['seed_index']}": t["val_accuracy"]
                                                        for t in training}}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
