"""Step ``score``: the matcher's threshold (validation pairs) and accuracy (held-out pairs), then every
output parsed and scored: answer correctness, step precision / recall / F1 against the key steps, tokens,
matched steps, and the consistency of the step paths over the sampled outputs."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from stages.assets.loaders import load_sentence_encoder
from stages.core.gx import validate_table
from stages.core.io import write_json, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, inp, out
from stages.m3cotbench.config import PAPER, ScoreInputs, load_score
from stages.m3cotbench.expectations import scores_suite
from stages.m3cotbench.io import read_outputs, read_scenes, scene_of
from stages.m3cotbench.matcher import (
    CONCEPTS,
    choose_threshold,
    labelled_pairs,
    match_scores,
    pair_accuracy,
    reference_sentences,
)
from stages.m3cotbench.metrics import greedy_matches, path_consistency, step_prf
from stages.m3cotbench.scene import gold
from stages.m3cotbench.steps_text import EVAL, TUNE, n_tokens, parse


@dataclass(frozen=True)
class Paths:
    text_encoder: Path = inp("all-MiniLM-L6-v2 asset folder")
    scenes: Path = inp("scene table")
    outputs: Path = inp("output texts")
    scores: Path = out("per (seed, model, test scan, task): correctness, step P/R/F1, tokens, consistency")
    matcher: Path = out("JSON: threshold grid, validation and held-out pair accuracy, chosen threshold")


def run(cfg: ScoreInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Tune the matcher on validation pairs, test it on held-out pairs, score every output."""
    c = cfg.score
    scenes = read_scenes(paths.scenes)
    outputs = read_outputs(paths.outputs)
    encoder = load_sentence_encoder(paths.text_encoder)
    refs = reference_sentences()
    val_pairs = labelled_pairs(TUNE, c.n_pairs, rng(ctx.seed, PAPER, "pairs", "val"))
    test_pairs = labelled_pairs(EVAL, c.n_pairs, rng(ctx.seed, PAPER, "pairs", "test"))
    parsed = {t: parse(t) for t in outputs.text.unique()}
    sentences = sorted({s for steps, _ in parsed.values() for s in steps}
                       | {p["sentence"] for p in val_pairs + test_pairs})
    emb = encoder.encode(refs + sentences, batch_size=64, normalize_embeddings=True, convert_to_numpy=True,
                         show_progress_bar=False).astype(np.float64)
    ref_emb, sent_index = emb[:len(refs)], {s: i for i, s in enumerate(sentences)}
    sent_scores = match_scores(emb[len(refs):] @ ref_emb.T)  # (sentence, reference), nearest only

    def pair_scores(pairs: list[dict[str, Any]]) -> tuple[np.ndarray, np.ndarray]:
        return (np.array([sent_scores[sent_index[p["sentence"]], p["ref"]] for p in pairs]),
                np.array([p["label"] for p in pairs]))

    vs, vl = pair_scores(val_pairs)
    tau, grid_acc = choose_threshold(vs, vl, c.threshold_grid)
    ts, tl = pair_scores(test_pairs)
    matcher = {"threshold": tau, "grid": c.threshold_grid, "val_accuracy_grid": grid_acc,
               "val_accuracy": pair_accuracy(vs, vl, tau), "test_accuracy": pair_accuracy(ts, tl, tau),
               "n_pairs": c.n_pairs}

    def concept_path(steps: list[str]) -> list[str]:
        """Each step as its matched concept id (nearest reference at or above the threshold) or unmatched."""
        path = []
        for s in steps:
            row = sent_scores[sent_index[s]]
            j = int(np.argmax(row))
            path.append(f"{CONCEPTS[j][0]}={CONCEPTS[j][1]}" if row[j] >= tau else f"unmatched:{s}")
        return path

    key_cache: dict[tuple[int, str], tuple[list[int], str]] = {}
    scene_rows = {int(r.scan): r for _, r in scenes.iterrows()}
    rows = []
    for (seed_index, model, scan, task), grp in outputs.groupby(["seed_index", "model", "scan", "task"], sort=True):
        if (scan, task) not in key_cache:
            steps, answer = gold(scene_of(scene_rows[scan]), task)
            key_cache[(scan, task)] = ([CONCEPTS.index(k) for k in steps], answer)
        keys, answer = key_cache[(scan, task)]
        grp = grp.sort_values("sample")
        text = grp.text.iloc[0]
        steps, pred = parsed[text]
        sim = sent_scores[[sent_index[s] for s in steps]][:, keys] if steps else np.zeros((0, len(keys)))
        n_matched = greedy_matches(sim, tau)
        p, r, f = step_prf(len(steps), len(keys), n_matched)
        consistency = path_consistency([concept_path(parsed[t][0]) for t in grp.text.iloc[1:]])
        rows.append({"seed_index": int(seed_index), "model": model, "scan": int(scan), "task": task,
                     "level": int(scene_rows[scan].level), "correct": float(pred == answer), "precision": p,
                     "recall": r, "f1": f, "n_steps": len(steps), "n_matched": n_matched, "tokens": n_tokens(text),
                     "consistency": consistency})
    scores = pd.DataFrame(rows)
    validate_table(scores, f"{PAPER}.scores", scores_suite(len(scores)))
    write_parquet(scores, paths.scores)
    write_json(matcher, paths.matcher, finite=True)
    return {"threshold": tau, "matcher_test_accuracy": matcher["test_accuracy"], "n_scored": len(scores)}


main = Step(PAPER, "score", run, load_score, Paths)


if __name__ == "__main__":
    main()
