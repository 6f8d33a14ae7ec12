"""Step ``train``: per seed and augmentation arm, a detector trained from the same initialisation for the same
steps on the training set plus the arm's synthetic images (drawn by the learned generator; the rs_procedural arm
renders the rs layouts procedurally); then COCO AP (overall and per group) of every arm, the baseline included, on
the validation and test scenes; and the generator's layout accuracy: the baseline detector's mAP on images
generated from the validation / test layouts against the same on the real (procedural) images."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import load_safetensors, save_safetensors, write_json, write_parquet
from stages.core.seeding import derive_seed, rng
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.core.workers import in_worker, map_runs
from stages.detection_debias.blueprint_generator import BlueprintGenerator, conditions, generate
from stages.detection_debias.coco_map import evaluate_detections
from stages.detection_debias.config import ARMS, GENERATED_ARMS, PAPER, TrainInputs, load_train
from stages.detection_debias.detector import detect, targets, train_detector
from stages.detection_debias.expectations import ap_suite
from stages.detection_debias.io import ground_truth, layouts_of, load_detector, read_images, read_layouts, read_objects
from stages.detection_debias.scenes import CLASSES, dress, render


def synthetic_images(bins: Any, layouts: list, generator: BlueprintGenerator | None,
                     gen: np.random.Generator) -> torch.Tensor:
    """Images of layouts: an appearance drawn from the full distribution (``scenes.dress``) and either rendered
    procedurally (``generator`` None, the upper bound) or named as colours in the generator's condition and drawn
    by the generator from the blueprint."""
    n = bins.image_size
    if not layouts:
        return torch.zeros((0, 3, n, n), dtype=torch.uint8)
    procedural = torch.from_numpy(np.stack([render(dress(bins, layout, gen), n) for layout in layouts]))
    return procedural if generator is None else generate(generator, conditions(layouts, procedural))


@dataclass(frozen=True)
class Paths:
    objects: Path = inp("object table")
    images: Path = inp("images")
    baseline: Path = inp("baseline detectors (the none arm)")
    generator: Path = inp("the blueprint-conditioned generator")
    layouts: Path = inp("synthetic layouts per seed and arm")
    models: Path = out("safetensors: the augmented arms' detectors per seed (seed<i>.<arm>.*)")
    ap: Path = out("COCO AP per (seed, arm, split, group); group -1 = overall mAP")
    training: Path = out("JSON: per seed and arm, the training loss curve and the synthetic image count; per seed "
                         "and split, the layout accuracy of generated images")


@dataclass(frozen=True)
class Shared:
    """What every detector run reads: the config, the scenes, the synthetic layouts, the generator and the seed."""

    cfg: TrainInputs
    objects: pd.DataFrame
    images: torch.Tensor
    layouts: pd.DataFrame
    generator: BlueprintGenerator
    seed: int


def read_inputs(cfg: TrainInputs, paths: Paths, seed: int) -> Shared:
    """The scenes, the synthetic layouts and the generator (in eval mode), as every run reads them."""
    bins = cfg.data.bins()
    objects = read_objects(paths.objects, bins)
    images = read_images(paths.images, int(objects.image.max()) + 1, cfg.data.image_size)
    generator = BlueprintGenerator(cfg.generator.width)
    generator.load_state_dict(load_safetensors(paths.generator))
    generator.eval()
    return Shared(cfg, objects, images, read_layouts(paths.layouts, bins, cfg.detector.n_seeds), generator, seed)


def split_ids(objects: pd.DataFrame) -> dict[str, np.ndarray]:
    """The sorted image ids of each split."""
    return {s: np.sort(objects[objects.split == s].image.unique()) for s in ("train", "val", "test")}


def detector_run(job: tuple[int, str], sh: Shared) -> tuple[dict[str, torch.Tensor], list[float], int]:
    """One (seed index, arm) detector, seeded from the job alone: its weights, loss curve and synthetic count."""
    s, arm = job
    d, det = sh.cfg.data, sh.cfg.detector
    train_ids = split_ids(sh.objects)["train"]
    by_image = layouts_of(sh.objects)
    source = "rs" if arm == "rs_procedural" else arm
    part = sh.layouts[(sh.layouts.seed_index == s) & (sh.layouts.arm == source)]
    synth_layouts = list(layouts_of(part).values())
    synth = synthetic_images(d.bins(), synth_layouts, sh.generator if arm in GENERATED_ARMS else None,
                             rng(sh.seed, PAPER, "appearance", source, s))
    x = torch.cat([sh.images[train_ids], synth])
    tgt = targets([by_image[int(i)] for i in train_ids] + synth_layouts, len(CLASSES), d.image_size)
    model, losses = train_detector(x, tgt, len(CLASSES), det.width, det.lr, det.batch_size, det.trainer,
                                   derive_seed(sh.seed, PAPER, "detector", s), f"{arm} detector, seed {s}",
                                   not in_worker())
    return {k: v.detach().clone() for k, v in model.state_dict().items()}, losses, len(synth_layouts)


def run(cfg: TrainInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train every augmented arm over ``threads / max_threads`` processes; evaluate every arm here."""
    det = cfg.detector
    jobs = [(s, arm) for s in range(det.n_seeds) for arm in ARMS[1:]]
    sh = read_inputs(cfg, paths, ctx.seed)
    results = map_runs(detector_run, jobs, sh, threads=ctx.threads, max_threads=det.max_threads,
                       desc="detection_debias detectors (seed × arm)", unit="detector")
    weights, log = {}, []
    for (s, arm), (state, losses, n_synthetic) in zip(jobs, results, strict=True):
        weights.update({f"seed{s}.{arm}.{k}": v for k, v in state.items()})
        log.append({"seed_index": s, "arm": arm, "n_synthetic": n_synthetic, "loss": losses})
    cap_threads(det.max_threads)  # the evaluation runs in this process, capped as the runs were
    bins, objects, images = cfg.data.bins(), sh.objects, sh.images
    baseline = load_safetensors(paths.baseline)
    ids = split_ids(objects)
    by_image = layouts_of(objects)
    truth = {s: ground_truth(objects, ids[s]) for s in ("val", "test")}
    generated = {sp: generate(sh.generator, conditions([by_image[int(i)] for i in ids[sp]], images[ids[sp]]))
                 for sp in ("val", "test")}
    rows, accuracy = [], []
    for s in range(det.n_seeds):
        models = {"none": load_detector(baseline, f"seed{s}.", det.width)}
        for split in ("val", "test"):
            acc = {kind: evaluate_detections(bins, len(CLASSES), truth[split],
                                             detect(models["none"], imgs, det.top_k, det.min_score))[0]
                   for kind, imgs in (("generated", generated[split]), ("procedural", images[ids[split]]))}
            accuracy.append({"seed_index": s, "split": split, **acc})
        models.update({arm: load_detector(weights, f"seed{s}.{arm}.", det.width) for arm in ARMS[1:]})
        for arm, model in models.items():
            for split in ("val", "test"):
                dets = detect(model, images[ids[split]], det.top_k, det.min_score)
                overall, per_group = evaluate_detections(bins, len(CLASSES), truth[split], dets)
                rows.append({"seed_index": s, "arm": arm, "split": split, "group": -1, "ap": overall})
                rows += [{"seed_index": s, "arm": arm, "split": split, "group": g, "ap": ap}
                         for g, ap in sorted(per_group.items())]
            print(f"seed {s} {arm}: test mAP {rows[-len(per_group) - 1]['ap']:.3f}", flush=True)
    ap = pd.DataFrame(rows)
    validate_table(ap, f"{PAPER}.ap", ap_suite(len(ap), bins.n_groups))
    write_json({"arms": log, "layout_accuracy": accuracy}, paths.training, finite=True)
    write_parquet(ap, paths.ap)
    save_safetensors(weights, paths.models)
    return {"n_rows": len(ap)}


main = Step(PAPER, "train", run, load_train, Paths)


if __name__ == "__main__":
    main()
