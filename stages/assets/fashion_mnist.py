"""Stage ``assets-fashion-mnist``: Fashion-MNIST (70k 28x28 images) from the Debian package's IDX files."""

from __future__ import annotations

import gzip
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from stages.assets.config import FashionMNISTConfig, load_fashion_mnist
from stages.assets.images import write_image_asset
from stages.assets.manifest import AssetError, sha256_file
from stages.core.stage import StageContext, Step, out

ASSET = "fashion-mnist"
CLASSES = ["T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"]
IDX_FILES = {"train": ("train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz"),
             "test": ("t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz")}
LICENCE = "MIT (Zalando SE; Debian copyright: Expat)"


@dataclass(frozen=True)
class Paths:
    images: Path = out("asset folder: <split>_images.npy, <split>_labels.npy, manifest.json")
    manifest: Path = out("committed copy of the manifest")


def read_idx(path: Path) -> np.ndarray:
    """An IDX array (gzip-compressed, big-endian header: 0x0000, dtype code 0x08 = uint8, ndim, dims)."""
    with gzip.open(path, "rb") as fh:
        data = fh.read()
    if data[:2] != b"\x00\x00" or data[2] != 0x08:
        raise ValueError(f"{path}: not an IDX file of unsigned bytes (header {data[:4].hex()})")
    ndim = data[3]
    dims = [int.from_bytes(data[4 + 4 * i:8 + 4 * i], "big") for i in range(ndim)]
    arr = np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim)
    if arr.size != int(np.prod(dims)):
        raise ValueError(f"{path}: {arr.size} bytes of data for dims {dims}")
    return arr.reshape(dims)


def debian_version(package: str) -> str:
    """The installed version of a Debian package (``dpkg-query``), or 'unknown'."""
    if shutil.which("dpkg-query") is None:
        return "unknown"
    result = subprocess.run(["dpkg-query", "-W", "-f=${Version}", package], capture_output=True, text=True)
    return result.stdout.strip() if result.returncode == 0 else "unknown"


def source_files(cfg: FashionMNISTConfig) -> dict[str, tuple[Path, Path]]:
    """The four IDX files; AssetError with the apt command when the Debian package is absent."""
    root = Path(cfg.source_dir)
    files = {s: (root / a, root / b) for s, (a, b) in IDX_FILES.items()}
    missing = [str(p) for pair in files.values() for p in pair if not p.is_file()]
    if missing:
        raise AssetError(f"asset '{ASSET}': {', '.join(missing)} not found. Install the Debian package "
                         f"'{cfg.debian_package}' (as root: `apt-get update && apt-get install -y "
                         f"{cfg.debian_package}`; `make install` does this when apt-get is available), "
                         f"then run `dvc repro assets-{ASSET}`")
    return files


def run(cfg: FashionMNISTConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Read the IDX files, validate shapes and labels, write NumPy arrays and the manifest."""
    files = source_files(cfg)
    images = {s: read_idx(img) for s, (img, _) in files.items()}
    labels = {s: read_idx(lab) for s, (_, lab) in files.items()}
    source = {"kind": "debian", "package": cfg.debian_package, "version": debian_version(cfg.debian_package),
              "files": {p.name: sha256_file(p) for pair in files.values() for p in pair}}
    manifest = write_image_asset(paths.images, ASSET, images, labels, CLASSES, 255, (28, 28), source, LICENCE,
                                 paths.manifest)
    return {"train": manifest["details"]["train_count"], "test": manifest["details"]["test_count"]}


main = Step("assets", ASSET, run, load_fashion_mnist, Paths)


if __name__ == "__main__":
    main()
