"""The image-encoder asset's params and loader (``assets-efficientnet-lite0``).

Kept in one module of its own so that the other assets' shared modules (and so their stages)
are untouched by it.
"""

from __future__ import annotations

from pathlib import Path

from pydantic import Field, model_validator

from stages.assets.manifest import verify_files
from stages.core.config import Section, load_section
from stages.core.efficientnet_lite import EfficientNetLite0
from stages.core.io import load_safetensors

IMAGE_ENCODER_FILE = "model.safetensors"


class EfficientNetConfig(Section):
    """EfficientNet-Lite0: ImageNet class ids one of which must be in the top-5 of each sample photograph."""

    check_size: int = Field(ge=32, le=1024)
    expected_top5: dict[str, list[int]] = Field(min_length=1)

    @model_validator(mode="after")
    def _check(self) -> EfficientNetConfig:
        for photo, ids in self.expected_top5.items():
            if not ids or any(not 0 <= i < 1000 for i in ids):
                raise ValueError(f"expected_top5.{photo}: ImageNet class ids in 0..999, got {ids}")
        return self


def load_efficientnet(params: Path) -> EfficientNetConfig:
    """``assets.efficientnet-lite0``."""
    return load_section(EfficientNetConfig, "assets.efficientnet-lite0", params)


def load_image_encoder(path: Path | str) -> EfficientNetLite0:
    """The frozen EfficientNet-Lite0 (eval mode, no gradients) of a prepared asset folder, checksum-verified."""
    path = Path(path)
    verify_files(path, path.name, [IMAGE_ENCODER_FILE])
    model = EfficientNetLite0()
    model.load_state_dict(load_safetensors(path / IMAGE_ENCODER_FILE), strict=True)
    return model.eval().requires_grad_(False)
