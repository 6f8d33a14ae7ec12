"""What several relash steps read or write: the hyperlink and node tables, the per-(data set, seed) model files."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
import torch

from stages.core.gx import validate_table
from stages.core.io import load_safetensors, read_parquet, save_safetensors
from stages.relash.baselines import HypergraphVAE
from stages.relash.diffusion import ScoreMLP
from stages.relash.embedding import JointEmbedding
from stages.relash.expectations import hyperlinks_suite, nodes_suite
from stages.relash.hypergraph import ATTRIBUTES


def read_hyperlinks(path: Path) -> pd.DataFrame:
    """The validated hyperlink table."""
    df = read_parquet(path)
    validate_table(df, "relash.hyperlinks", hyperlinks_suite)
    return df


def read_nodes(path: Path) -> pd.DataFrame:
    """The validated node table (index, class, fixed spectral features)."""
    df = read_parquet(path)
    validate_table(df, "relash.nodes", nodes_suite)
    return df


@dataclass(frozen=True)
class DataSet:
    """One data set's splits as arrays: node sets, incidence, attributes; node classes and fixed features."""

    name: str
    members: dict[str, list[str]]
    incidence: dict[str, np.ndarray]
    attributes: dict[str, np.ndarray]
    node_class: np.ndarray
    n_classes: int
    node_features: np.ndarray


def dataset_arrays(name: str, hyperlinks: pd.DataFrame, nodes: pd.DataFrame) -> DataSet:
    """Assemble one data set from the two tables."""
    from stages.relash.hypergraph import SPLITS, incidence

    nd = nodes[nodes.dataset == name].sort_values("index")
    hl = hyperlinks[hyperlinks.dataset == name]
    feat_cols = sorted((c for c in nd.columns if c.startswith("f") and c[1:].isdigit()), key=lambda c: int(c[1:]))
    members = {s: hl[hl.split == s].members.tolist() for s in SPLITS}
    return DataSet(name=name, members=members,
                   incidence={s: incidence(members[s], len(nd)) for s in SPLITS},
                   attributes={s: hl[hl.split == s][list(ATTRIBUTES)].to_numpy(np.float64) for s in SPLITS},
                   node_class=nd.class_index.to_numpy(), n_classes=int(nd.class_index.max()) + 1,
                   node_features=nd[feat_cols].to_numpy(np.float64))


def model_file(models: Path, dataset: str, seed_index: int) -> Path:
    """Where the fitted models of one (data set, seed) live."""
    return Path(models) / f"{dataset}_seed{seed_index}.safetensors"


@dataclass
class FittedModels:
    """ReLaSH's embedding and score model, the Gaussian on its latents, and the VAE of one (data set, seed)."""

    embedding: JointEmbedding
    score: ScoreMLP
    gaussian_mean: np.ndarray
    gaussian_cov: np.ndarray
    vae: HypergraphVAE


def save_models(fitted: FittedModels, path: Path) -> None:
    """One safetensors file with prefixed keys."""
    tensors = {f"embedding.{k}": v for k, v in fitted.embedding.tensors().items()}
    tensors |= {f"score.{k}": v.detach().clone() for k, v in fitted.score.state_dict().items()}
    tensors |= {f"vae.{k}": v.detach().clone() for k, v in fitted.vae.state_dict().items()}
    tensors |= {"gaussian.mean": torch.as_tensor(fitted.gaussian_mean),
                "gaussian.cov": torch.as_tensor(fitted.gaussian_cov)}
    save_safetensors(tensors, path)


def load_models(path: Path, n_nodes: int, n_attr: int, latent_dim: int, score_hidden: int,
                vae_hidden: int) -> FittedModels:
    """Rebuild the modules of :func:`save_models` (sizes from the train params)."""
    t = load_safetensors(path)
    part = {p: {k.split(".", 1)[1]: v for k, v in t.items() if k.startswith(p + ".")}
            for p in ("embedding", "score", "vae")}
    score = ScoreMLP(latent_dim, score_hidden)
    score.load_state_dict(part["score"])
    vae = HypergraphVAE(n_nodes, n_attr, latent_dim, vae_hidden)
    vae.load_state_dict(part["vae"])
    return FittedModels(embedding=JointEmbedding.from_tensors(part["embedding"]), score=score.eval(),
                        gaussian_mean=t["gaussian.mean"].numpy(), gaussian_cov=t["gaussian.cov"].numpy(),
                        vae=vae.eval())
