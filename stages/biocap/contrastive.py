"""BioCAP's training on cached features: label texts of mixed types plus captions, one or two visual projectors.

Each step draws a batch of training images; every image gets one label text of a random type
(scientific name, common name, taxonomic string, or both; BioCLIP's mixed text types) and, in the
caption arms, one of its captions. The label loss treats every label text of the same species as a
positive (a multi-positive InfoNCE); the caption loss pairs each image with its own caption (and
with identical caption strings). The dual-projector arms embed the image with a taxonomy projector
for label texts and a caption projector for captions (the paper's separate visual projectors, §3.2);
the single-projector arm uses one projector for both. Every arm trains for the same number of steps.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd
import torch
from tqdm import tqdm

from stages.biocap.captions import TEXT_TYPES
from stages.biocap.config import CAPTION_ARMS, TrainConfig
from stages.core.clip import FeatureCLIP, multi_positive_infonce

DUAL_ARMS = {"caption_dual", "hallucinated", "shuffled"}


def image_heads(arm: str) -> tuple[str, ...]:
    """The visual projectors an arm trains: taxonomy + caption for the dual arms, one shared otherwise."""
    return ("taxonomy", "caption") if arm in DUAL_ARMS else ("image",)


def label_head(arm: str) -> str:
    """The projector that pairs images with label texts (used for zero-shot classification)."""
    return "taxonomy" if arm in DUAL_ARMS else "image"


def caption_head(arm: str) -> str:
    """The projector that pairs images with captions (used for caption retrieval)."""
    return "caption" if arm in DUAL_ARMS else "image"


def standardise(features: np.ndarray, reference_rows: np.ndarray) -> np.ndarray:
    """Features centred and scaled per dimension by the statistics of the training images only."""
    ref = features[reference_rows]
    return (features - ref.mean(0)) / (ref.std(0) + 1e-6)


def same_value_positives(keys: torch.Tensor) -> torch.Tensor:
    """positives[i, j] = keys[i] == keys[j]: the label texts of one species, or identical caption strings."""
    return keys[:, None] == keys[None, :]


@dataclass(frozen=True)
class TrainingData:
    """What training reads: standardised image features of the training images, their species, text features
    and, per image, the text ids of its label texts and of its captions of each kind."""

    image_features: torch.Tensor          # (n_train, d_img)
    species: torch.Tensor                 # (n_train,)
    text_features: torch.Tensor           # (n_texts, d_txt)
    label_text_ids: torch.Tensor          # (n_train, len(TEXT_TYPES)): text id of each label type of its species
    caption_text_ids: dict[str, torch.Tensor]  # kind -> (n_train, captions_per_image)
    text_codes: torch.Tensor              # (n_texts,): equal for equal strings


def training_data(image_features: np.ndarray, text_features: np.ndarray, specimens: pd.DataFrame,
                  texts: pd.DataFrame) -> TrainingData:
    """Index the tables once: which text ids belong to which training image."""
    train = specimens[specimens.split == "train"].sort_values("row")
    feats = standardise(image_features, train.row.to_numpy())[train.row.to_numpy()]
    labels = texts[texts.row == -1]
    label_ids = labels.pivot(index="species_id", columns="kind", values="text_id")[list(TEXT_TYPES)]
    captions = {}
    for kind in sorted(set(CAPTION_ARMS.values())):
        per_image = texts[texts.kind == kind].sort_values("text_id").groupby("row").text_id.apply(list)
        captions[kind] = torch.as_tensor(np.stack([per_image[r] for r in train.row]), dtype=torch.long)
    codes = pd.factorize(texts.sort_values("text_id").text)[0]
    return TrainingData(image_features=torch.as_tensor(feats, dtype=torch.float32),
                        species=torch.as_tensor(train.species_id.to_numpy(), dtype=torch.long),
                        text_features=torch.as_tensor(text_features, dtype=torch.float32),
                        label_text_ids=torch.as_tensor(label_ids.loc[train.species_id].to_numpy(), dtype=torch.long),
                        caption_text_ids=captions, text_codes=torch.as_tensor(codes, dtype=torch.long))


def train_arm(arm: str, data: TrainingData, cfg: TrainConfig, seed: int, desc: str = "",
              progress_bar: bool = True) -> tuple[FeatureCLIP, list[dict[str, float]]]:
    """Train one arm's projectors for ``cfg.steps`` AdamW steps; return the model and the loss log."""
    gen = torch.Generator().manual_seed(seed)
    torch.manual_seed(seed)
    model = FeatureCLIP(data.image_features.shape[1], data.text_features.shape[1], cfg.embed_dim,
                        image_heads(arm), cfg.hidden)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.lr, weight_decay=cfg.weight_decay)
    caption_kind = CAPTION_ARMS.get(arm)
    n = len(data.species)
    batch = min(cfg.batch_size, n)
    log = []
    for step in tqdm(range(1, cfg.steps + 1), desc=desc or arm, unit="step", leave=False, disable=not progress_bar):
        idx = torch.randperm(n, generator=gen)[:batch]
        feats = data.image_features[idx]
        kinds = torch.randint(len(TEXT_TYPES), (batch,), generator=gen)
        label_ids = data.label_text_ids[idx, kinds]
        scale = model.logit_scale()
        tax_loss = multi_positive_infonce(model.embed_images(feats, label_head(arm)),
                                          model.embed_texts(data.text_features[label_ids]),
                                          same_value_positives(data.species[idx]), scale)
        cap_loss = torch.zeros(())
        if caption_kind is not None:
            options = data.caption_text_ids[caption_kind][idx]
            pick = torch.randint(options.shape[1], (batch,), generator=gen)
            cap_ids = options[torch.arange(batch), pick]
            cap_loss = multi_positive_infonce(model.embed_images(feats, caption_head(arm)),
                                              model.embed_texts(data.text_features[cap_ids]),
                                              same_value_positives(data.text_codes[cap_ids]), scale)
        loss = tax_loss + cfg.caption_weight * cap_loss
        opt.zero_grad()
        loss.backward()
        opt.step()
        if step % cfg.log_every == 0 or step == cfg.steps:
            log.append({"step": step, "loss": float(loss), "taxonomy_loss": float(tax_loss),
                        "caption_loss": float(cap_loss)})
    return model.eval(), log
