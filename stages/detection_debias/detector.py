"""A small single-stage, anchor-free detector (CenterNet-style: class heatmaps, box size and centre offset at
stride 4), its training targets and loss, decoding, the ROI / context features the representation score reads,
and its Lightning training loop."""

from __future__ import annotations

from typing import Any

import numpy as np
import torch
from torch import nn
from torch.nn import functional as F

STRIDE = 4


def _block(c_in: int, c_out: int, stride: int = 1) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(c_in, c_out, 3, stride, 1, bias=False), nn.BatchNorm2d(c_out), nn.ReLU())


class CenterNet(nn.Module):
    """Backbone (five 3x3 conv blocks, stride 4) and three 1x1 heads: class heatmap, log box size, centre offset."""

    def __init__(self, n_classes: int, width: int) -> None:
        super().__init__()
        c1, c2, c3 = width, 2 * width, 4 * width
        self.backbone = nn.Sequential(_block(3, c1, 2), _block(c1, c2), _block(c2, c3, 2), _block(c3, c3),
                                      _block(c3, c3))
        self.heads = nn.ModuleDict({name: nn.Conv2d(c3, k, 1)
                                    for name, k in (("heat", n_classes), ("size", 2), ("offset", 2))})
        nn.init.constant_(self.heads["heat"].bias, -2.19)  # initial heatmap ≈ 0.1 (CenterNet's prior)

    def features(self, images: torch.Tensor) -> torch.Tensor:
        """Backbone features (B, 4 width, H/4, W/4) of uint8 or [0, 1] images."""
        x = images.float() / 255.0 if images.dtype == torch.uint8 else images
        return self.backbone(x - 0.5)

    def forward(self, images: torch.Tensor) -> dict[str, torch.Tensor]:
        f = self.features(images)
        return {name: head(f) for name, head in self.heads.items()}


def targets(objects: list[list[tuple[int, tuple[int, int, int, int]]]], n_classes: int,
            image_size: int) -> dict[str, torch.Tensor]:
    """Training targets per image: Gaussian class heatmaps peaking at 1 on each box centre's cell, and at those
    cells the log box size (w, h) and the sub-cell centre offset; ``mask`` marks the centre cells."""
    m = image_size // STRIDE
    n = len(objects)
    heat = np.zeros((n, n_classes, m, m), np.float32)
    size = np.zeros((n, 2, m, m), np.float32)
    offset = np.zeros((n, 2, m, m), np.float32)
    mask = np.zeros((n, m, m), np.float32)
    yy, xx = np.mgrid[0:m, 0:m]
    for i, objs in enumerate(objects):
        for cls, (x0, y0, x1, y1) in objs:
            cx, cy = (x0 + x1) / 2 / STRIDE, (y0 + y1) / 2 / STRIDE
            ix, iy = min(int(cx), m - 1), min(int(cy), m - 1)
            sigma = max(0.5, min(x1 - x0, y1 - y0) / STRIDE / 4)
            g = np.exp(-((xx - ix) ** 2 + (yy - iy) ** 2) / (2 * sigma ** 2))
            heat[i, cls] = np.maximum(heat[i, cls], g)
            size[i, :, iy, ix] = np.log([x1 - x0, y1 - y0])
            offset[i, :, iy, ix] = (cx - ix, cy - iy)
            mask[i, iy, ix] = 1.0
    return {k: torch.from_numpy(v) for k, v in (("heat", heat), ("size", size), ("offset", offset), ("mask", mask))}


def focal_loss(logits: torch.Tensor, target: torch.Tensor, alpha: float = 2.0, beta: float = 4.0) -> torch.Tensor:
    """CenterNet's penalty-reduced focal loss on the heatmap, summed and divided by the number of centres."""
    p = torch.sigmoid(logits).clamp(1e-4, 1 - 1e-4)
    pos = target.eq(1).float()
    pos_loss = -torch.log(p) * (1 - p) ** alpha * pos
    neg_loss = -torch.log(1 - p) * p ** alpha * (1 - target) ** beta * (1 - pos)
    return (pos_loss.sum() + neg_loss.sum()) / pos.sum().clamp(min=1.0)


def detection_loss(out: dict[str, torch.Tensor], tgt: dict[str, torch.Tensor]) -> torch.Tensor:
    """Heatmap focal loss plus L1 on log size and offset at the centre cells."""
    mask = tgt["mask"].unsqueeze(1)
    n = mask.sum().clamp(min=1.0)
    reg = (((out["size"] - tgt["size"]).abs() + (out["offset"] - tgt["offset"]).abs()) * mask).sum() / n
    return focal_loss(out["heat"], tgt["heat"]) + reg


@torch.no_grad()
def decode(out: dict[str, torch.Tensor], top_k: int, min_score: float) -> list[dict[str, np.ndarray]]:
    """Per image: boxes (x0, y0, x1, y1 in pixels), scores and classes of the top-k heatmap peaks (3x3 local
    maxima) scoring at least ``min_score``."""
    heat = torch.sigmoid(out["heat"])
    peaks = heat * (F.max_pool2d(heat, 3, 1, 1) == heat)
    b, c, m, _ = heat.shape
    scores, idx = peaks.reshape(b, -1).topk(min(top_k, c * m * m))
    cls, cell = idx // (m * m), idx % (m * m)
    iy, ix = cell // m, cell % m
    results = []
    for i in range(b):
        size = out["size"][i, :, iy[i], ix[i]].exp()
        off = out["offset"][i, :, iy[i], ix[i]]
        cx, cy = (ix[i] + off[0]) * STRIDE, (iy[i] + off[1]) * STRIDE
        boxes = torch.stack([cx - size[0] / 2, cy - size[1] / 2, cx + size[0] / 2, cy + size[1] / 2], 1)
        keep = scores[i] >= min_score
        results.append({"boxes": boxes[keep].numpy(), "scores": scores[i][keep].numpy(),
                        "classes": cls[i][keep].numpy()})
    return results


@torch.no_grad()
def roi_and_context(model: CenterNet, images: torch.Tensor, image_index: np.ndarray, boxes: np.ndarray,
                    batch_size: int = 256) -> tuple[np.ndarray, np.ndarray]:
    """Per object: the ROI feature (mean backbone feature over the feature cells its box covers) and the context
    feature (mean over the image's other cells)."""
    model.eval()
    feats = torch.cat([model.features(images[b:b + batch_size]) for b in range(0, len(images), batch_size)])
    m = feats.shape[-1]
    masks = np.zeros((len(boxes), m, m), np.float32)
    for j, (x0, y0, x1, y1) in enumerate(boxes):
        c0, r0 = int(x0 // STRIDE), int(y0 // STRIDE)
        c1, r1 = max(c0 + 1, int(np.ceil(x1 / STRIDE))), max(r0 + 1, int(np.ceil(y1 / STRIDE)))
        masks[j, r0:r1, c0:c1] = 1.0
    mk = torch.from_numpy(masks)
    f = feats[torch.from_numpy(image_index)]
    roi = torch.einsum("nchw,nhw->nc", f, mk) / mk.sum((1, 2))[:, None]
    ctx = torch.einsum("nchw,nhw->nc", f, 1 - mk) / (1 - mk).sum((1, 2)).clamp(min=1.0)[:, None]
    return roi.numpy(), ctx.numpy()


def train_detector(images: torch.Tensor, tgt: dict[str, torch.Tensor], n_classes: int, width: int, lr: float,
                   batch_size: int, trainer_cfg: Any, seed: int, desc: str,
                   progress_bar: bool = True) -> tuple[CenterNet, list[float]]:
    """Train a fresh detector for ``trainer_cfg.max_steps`` steps (AdamW, cosine decay) on shuffled batches;
    returns it in eval mode with its mean loss per logged interval."""
    import lightning

    from stages.core.trainer import build_trainer

    lightning.seed_everything(seed % 2**32, workers=True, verbose=False)
    model = CenterNet(n_classes, width)
    losses: list[float] = []

    class Module(lightning.LightningModule):
        def __init__(self) -> None:
            super().__init__()
            self.net = model
            self.running: list[float] = []

        def training_step(self, batch: tuple[torch.Tensor, ...], _: int) -> torch.Tensor:
            x, heat, size, offset, mask = batch
            loss = detection_loss(self.net(x), {"heat": heat, "size": size, "offset": offset, "mask": mask})
            self.running.append(float(loss))
            if len(self.running) == trainer_cfg.log_every_n_steps:
                losses.append(float(np.mean(self.running)))
                self.running = []
            return loss

        def configure_optimizers(self) -> Any:
            opt = torch.optim.AdamW(self.parameters(), lr=lr, weight_decay=1e-4)
            sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=trainer_cfg.max_steps)
            return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}

    data = torch.utils.data.TensorDataset(images, tgt["heat"], tgt["size"], tgt["offset"], tgt["mask"])
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=len(data) > batch_size,
                                         generator=torch.Generator().manual_seed(seed))
    bar = progress_bar and trainer_cfg.enable_progress_bar
    trainer = build_trainer(trainer_cfg, max_epochs=-1, enable_progress_bar=bar)
    print(desc, flush=True)
    trainer.fit(Module(), loader)
    return model.eval(), losses


@torch.no_grad()
def detect(model: CenterNet, images: torch.Tensor, top_k: int, min_score: float,
           batch_size: int = 256) -> list[dict[str, np.ndarray]]:
    """Detections on every image, batched."""
    model.eval()
    out: list[dict[str, np.ndarray]] = []
    for b in range(0, len(images), batch_size):
        out += decode(model(images[b:b + batch_size]), top_k, min_score)
    return out
