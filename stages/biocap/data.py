"""Step ``data``: the taxonomy, the specimen images, their measured traits, and every text (names and captions)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from tqdm import tqdm

from stages.biocap.captions import (
    HELDOUT_FORMAT,
    TEXT_TYPES,
    TRAIN_FORMATS,
    hallucinated_traits,
    shuffled_traits,
    taxon_text,
    wiki_entry,
    write_caption,
)
from stages.biocap.config import PAPER, DataConfig, load_data
from stages.biocap.io import validate_tables
from stages.biocap.specimens import Taxon, build_taxonomy, measure_traits, render, sample_drawing
from stages.core.io import atomic_path, write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out

TRAIT_COLUMNS = ["shape", "colour", "pattern", "size", "posture", "position"]


@dataclass(frozen=True)
class Paths:
    images: Path = out("uint8 array (n, S, S, 3) of the specimen images (.npy)")
    specimens: Path = out("one row per image: split, shift, taxon, background, measured traits (Parquet)")
    taxa: Path = out("one row per species: role, names, wiki entry (Parquet)")
    texts: Path = out("one row per text: label text types, captions of three kinds, retrieval queries (Parquet)")


def assign_roles(taxa: list[Taxon], cfg: DataConfig, gen: np.random.Generator) -> dict[int, str]:
    """Per genus, val and test taxa are held out; every held-out colour and marking is seen in training."""
    for _ in range(200):
        roles = {}
        for genus in dict.fromkeys(t.genus for t in taxa):
            order = gen.permutation([t.species_id for t in taxa if t.genus == genus])
            for i, sid in enumerate(order):
                roles[int(sid)] = ("val" if i < cfg.val_taxa_per_genus else
                                   "test" if i < cfg.val_taxa_per_genus + cfg.test_taxa_per_genus else "train")
        trained = [t for t in taxa if roles[t.species_id] == "train"]
        colours, patterns = {t.colour for t in trained}, {t.pattern for t in trained}
        if all(t.colour in colours and t.pattern in patterns for t in taxa if roles[t.species_id] != "train"):
            return roles
    raise ValueError(f"{PAPER}.data: no split of the taxa shows every held-out colour and marking in training; "
                     "raise species_per_genus")


def plan_specimens(taxa: list[Taxon], roles: dict[int, str], cfg: DataConfig) -> list[tuple[str, bool, Taxon]]:
    """(split, shifted, taxon) for every image: training and seen-test images of training taxa, in-distribution
    and shifted images of the val and test taxa."""
    plan = []
    for t in taxa:
        role = roles[t.species_id]
        if role == "train":
            plan += [("train", False, t)] * cfg.n_train_per_taxon
            plan += [("seen_test", False, t)] * cfg.n_seen_test_per_taxon
        else:
            plan += [(role, False, t)] * cfg.n_heldout_per_taxon + [(role, True, t)] * cfg.n_heldout_per_taxon
    return plan


def build(cfg: DataConfig, seed: int) -> tuple[np.ndarray, pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """Images, specimen table, taxon table and text table."""
    taxa = build_taxonomy(cfg.species_per_genus, rng(seed, PAPER, "taxonomy"))
    roles = assign_roles(taxa, cfg, rng(seed, PAPER, "roles"))
    plan = plan_specimens(taxa, roles, cfg)
    draw_rng, pixel_rng = rng(seed, PAPER, "drawings"), rng(seed, PAPER, "pixels")
    images = np.empty((len(plan), cfg.image_size, cfg.image_size, 3), dtype=np.uint8)
    rows = []
    for i, (split, shifted, taxon) in enumerate(tqdm(plan, desc="draw specimens", unit="img")):
        d = sample_drawing(taxon, shifted, cfg.habitat_probability, cfg.pattern_probability, draw_rng)
        images[i] = render(d, cfg.image_size, pixel_rng)
        rows.append({"row": i, "split": split, "shifted": shifted, "species_id": taxon.species_id,
                     "background": d.background, **measure_traits(images[i]),
                     "drawn_pattern": taxon.pattern if d.shows_pattern else "plain", "drawn_length": d.length})
    specimens = pd.DataFrame(rows)
    taxa_table = pd.DataFrame([{"species_id": t.species_id, "genus": t.genus, "family": t.family, "shape": t.shape,
                                "colour": t.colour, "pattern": t.pattern, "role": roles[t.species_id],
                                "scientific": t.scientific, "common": t.common, "taxonomy": t.taxonomy,
                                "wiki": wiki_entry(t)} for t in taxa])
    texts = build_texts(taxa, specimens, cfg, seed)
    return images, specimens, taxa_table, texts


def build_texts(taxa: list[Taxon], specimens: pd.DataFrame, cfg: DataConfig, seed: int) -> pd.DataFrame:
    """Label texts of every taxon; faithful, hallucinated and shuffled captions of every training image
    (``captions_per_image`` formats each); a held-out-format query for every seen-test, val and test image
    in distribution."""
    rows: list[dict[str, Any]] = []
    for t in taxa:
        rows += [{"kind": kind, "species_id": t.species_id, "row": -1, "text": taxon_text(t, kind)}
                 for kind in TEXT_TYPES]
    train = specimens[specimens.split == "train"]
    measured = train[TRAIT_COLUMNS].to_dict("records")
    by_id = {t.species_id: t for t in taxa}
    gen = rng(seed, PAPER, "captions")
    kinds = {"caption": measured,
             "hallucinated": [hallucinated_traits(by_id[int(s)], gen) for s in train.species_id],
             "shuffled": shuffled_traits(measured, gen)}
    for kind, traits in kinds.items():
        for (row, sid), tr in zip(zip(train.row, train.species_id, strict=True), traits, strict=True):
            formats = gen.choice(len(TRAIN_FORMATS), size=cfg.captions_per_image, replace=False)
            rows += [{"kind": kind, "species_id": int(sid), "row": int(row),
                      "text": write_caption(tr, TRAIN_FORMATS[int(f)])} for f in formats]
    gallery = specimens[(specimens.split != "train") & ~specimens.shifted]
    for rec in gallery.to_dict("records"):
        rows.append({"kind": "query", "species_id": int(rec["species_id"]), "row": int(rec["row"]),
                     "text": write_caption(rec, HELDOUT_FORMAT)})
    texts = pd.DataFrame(rows)
    texts.insert(0, "text_id", np.arange(len(texts)))
    return texts


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the images and the three tables."""
    images, specimens, taxa, texts = build(cfg, ctx.seed)
    validate_tables(specimens, taxa, texts)
    with atomic_path(paths.images) as tmp, open(tmp, "wb") as fh:
        np.save(fh, images, allow_pickle=False)
    write_parquet(specimens, paths.specimens)
    write_parquet(taxa, paths.taxa)
    write_parquet(texts, paths.texts)
    agree = float((specimens.pattern == specimens.drawn_pattern).mean())
    return {"n_images": len(specimens), "n_texts": len(texts), "pattern_measured_as_drawn": agree}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
