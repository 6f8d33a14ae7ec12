"""Sample-quality metrics in the feature space of a classifier trained here ("FID" for this data set).

The Fréchet distance of Heusel et al. (2017) between Gaussians fitted to features, and the
k-NN precision/recall of Kynkäänniemi et al. (2019). The features are the penultimate layer
of :class:`FeatureNet` trained on the same images, not Inception-v3, so the numbers are not
comparable with ImageNet FIDs. purrception trains the Fashion-MNIST feature net; every paper that
scores images of that asset loads it with :func:`load_feature_net` (ssg does).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import scipy.linalg
import torch
from torch import nn

from stages.core.io import load_safetensors, read_json


class FeatureNet(nn.Module):
    """Two conv blocks → a ``feature_dim`` penultimate layer (the metric's features) → class logits."""

    def __init__(self, image_size: int, channels: int, feature_dim: int, n_classes: int) -> None:
        super().__init__()
        c = channels
        self.convs = nn.Sequential(
            nn.Conv2d(1, c, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2),
            nn.Conv2d(c, 2 * c, 3, 1, 1), nn.ReLU(), nn.MaxPool2d(2), nn.Flatten())
        self.features = nn.Sequential(nn.Linear(2 * c * (image_size // 4) ** 2, feature_dim), nn.ReLU())
        self.classify = nn.Linear(feature_dim, n_classes)

    def embed(self, images: torch.Tensor) -> torch.Tensor:
        """Penultimate features (B, feature_dim) of images (B, H, W) in [0, 1]."""
        return self.features(self.convs(images[:, None] * 2 - 1))

    def forward(self, images: torch.Tensor) -> torch.Tensor:
        return self.classify(self.embed(images))


@torch.inference_mode()
def embed_all(net: FeatureNet, images: torch.Tensor, batch: int = 500) -> np.ndarray:
    """Features of many images, float64."""
    return torch.cat([net.embed(images[i:i + batch]) for i in range(0, len(images), batch)]).double().numpy()


def frechet_distance(a: np.ndarray, b: np.ndarray) -> float:
    """‖μ_a − μ_b‖² + Tr(Σ_a + Σ_b − 2(Σ_a Σ_b)^½) between Gaussians fitted to feature sets (FID's formula)."""
    mu_a, mu_b = a.mean(axis=0), b.mean(axis=0)
    cov_a, cov_b = np.cov(a, rowvar=False), np.cov(b, rowvar=False)
    root = scipy.linalg.sqrtm(cov_a @ cov_b)
    if np.iscomplexobj(root):
        root = root.real
    value = float(((mu_a - mu_b) ** 2).sum() + np.trace(cov_a + cov_b - 2 * root))
    return max(value, 0.0)


def pairwise_distances(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Euclidean distances (len(a), len(b))."""
    sq = (a * a).sum(1)[:, None] + (b * b).sum(1)[None] - 2 * a @ b.T
    return np.sqrt(np.maximum(sq, 0.0))


def knn_radii(x: np.ndarray, k: int) -> np.ndarray:
    """Distance of each point to its k-th nearest neighbour within the same set (itself excluded)."""
    return np.sort(pairwise_distances(x, x), axis=1)[:, k]


def precision_recall(real: np.ndarray, fake: np.ndarray, k: int) -> tuple[float, float]:
    """k-NN precision (fakes inside the real manifold) and recall (reals inside the fake manifold)."""
    d = pairwise_distances(fake, real)
    precision = float((d <= knn_radii(real, k)[None]).any(axis=1).mean())
    recall = float((d.T <= knn_radii(fake, k)[None]).any(axis=1).mean())
    return precision, recall


def load_feature_net(folder: Path) -> FeatureNet:
    """The trained feature net of the Fréchet distance (``classifier.safetensors``, ``manifest.json``), eval mode."""
    m = read_json(Path(folder) / "manifest.json")
    net = FeatureNet(m["image_size"], m["channels"], m["feature_dim"], m["n_classes"])
    net.load_state_dict(load_safetensors(Path(folder) / "classifier.safetensors"))
    return net.eval()
