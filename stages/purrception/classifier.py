"""Step ``classifier``: train the feature net of the Fréchet distance on the train split; test accuracy."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import lightning
import torch
from torch.nn import functional as F

from stages.core.image_metrics import FeatureNet
from stages.core.io import atomic_dir, save_safetensors, write_json
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.trainer import build_trainer
from stages.purrception.config import PAPER, ClassifierConfig, load_classifier
from stages.purrception.io import N_CLASSES, read_images


@dataclass(frozen=True)
class Paths:
    images: Path = inp("image array")
    index: Path = inp("image index")
    classifier: Path = out("folder: classifier.safetensors and manifest.json")
    classifier_metrics: Path = out("train/test accuracy (JSON)")


class ClassifierModule(lightning.LightningModule):
    """Cross-entropy of the class label."""

    def __init__(self, net: FeatureNet, lr: float) -> None:
        super().__init__()
        self.net, self.lr = net, lr

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        images, labels = batch
        return F.cross_entropy(self.net(images), labels)

    def configure_optimizers(self) -> torch.optim.Optimizer:
        return torch.optim.Adam(self.net.parameters(), lr=self.lr)


@torch.inference_mode()
def accuracy(net: FeatureNet, images: torch.Tensor, labels: torch.Tensor, batch: int = 1000) -> float:
    """Fraction of images whose argmax class is the label."""
    pred = torch.cat([net(images[i:i + batch]).argmax(-1) for i in range(0, len(images), batch)])
    return float((pred == labels).float().mean())


def run(cfg: ClassifierConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Train on the train split; report train and test accuracy."""
    data = read_images(paths.images, paths.index)
    (train_x, train_y), (test_x, test_y) = data["train"], data["test"]
    train_y, test_y = torch.as_tensor(train_y), torch.as_tensor(test_y)
    n_classes, size = N_CLASSES, train_x.shape[-1]
    seed = derive_seed(ctx.seed, PAPER, "classifier") % 2**32
    lightning.seed_everything(seed, workers=True, verbose=False)
    module = ClassifierModule(FeatureNet(size, cfg.channels, cfg.feature_dim, n_classes), cfg.lr)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(train_x, train_y), batch_size=cfg.batch_size,
                                         shuffle=True, generator=torch.Generator().manual_seed(seed))
    build_trainer(cfg.trainer).fit(module, loader)
    net = module.net.eval()
    result = {"train_accuracy": accuracy(net, train_x, train_y), "test_accuracy": accuracy(net, test_x, test_y),
              "feature_dim": cfg.feature_dim, "steps": int(module.global_step)}
    with atomic_dir(paths.classifier) as folder:
        save_safetensors(dict(net.state_dict()), folder / "classifier.safetensors")
        write_json({"image_size": size, "channels": cfg.channels, "feature_dim": cfg.feature_dim,
                    "n_classes": n_classes}, folder / "manifest.json")
    write_json(result, paths.classifier_metrics)
    return result


main = Step(PAPER, "classifier", run, load_classifier, Paths)


if __name__ == "__main__":
    main()
