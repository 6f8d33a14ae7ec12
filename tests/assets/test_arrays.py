"""Image and time-series assets: shapes, label ranges, splits, checksums, and the manifest report."""

from __future__ import annotations

import numpy as np
import pytest

from stages.assets import fashion_mnist
from stages.assets.config import load_fashion_mnist
from stages.assets.loaders import SERIES_FILE, load_images, load_time_series, load_tla_tools
from stages.assets.manifest import AssetError
from stages.assets.manifest_report import Paths as ReportPaths
from stages.assets.manifest_report import run as report_run
from stages.core.io import read_json
from tests.assets.conftest import corrupt_copy


def test_fashion_mnist(fashion_mnist_asset):
    d = load_images(fashion_mnist_asset)
    assert d.train_images.shape == (60000, 28, 28) and d.test_images.shape == (10000, 28, 28)
    assert d.train_images.dtype == np.uint8 and d.pixel_max == 255
    assert set(np.unique(d.train_labels)) == set(range(10)) and len(d.classes) == 10
    assert np.bincount(d.test_labels).tolist() == [1000] * 10


def test_fashion_mnist_absent_says_how_to_install(asset_params, tmp_path):
    cfg = load_fashion_mnist(asset_params).model_copy(update={"source_dir": str(tmp_path / "nowhere")})
    with pytest.raises(AssetError, match=r"apt-get install -y dataset-fashion-mnist"):
        fashion_mnist.source_files(cfg)


def test_digits(digits_asset):
    d = load_images(digits_asset)
    assert d.train_images.shape[1:] == (8, 8) and len(d.train_images) + len(d.test_images) == 1797
    assert len(d.test_images) == 450 and d.pixel_max == 16 and d.train_images.max() <= 16
    assert set(np.unique(d.test_labels)) == set(range(10))


def test_corrupt_images_detected(digits_asset, tmp_path):
    bad = corrupt_copy(digits_asset, tmp_path, "test_labels.npy")
    with pytest.raises(AssetError, match=r"test_labels\.npy is corrupt.*dvc repro assets-digits"):
        load_images(bad)


def test_japanese_vowels(japanese_vowels_asset):
    d = load_time_series(japanese_vowels_asset)
    assert len(d["train"].series) == 270 and len(d["test"].series) == 370
    lengths = [s.shape[1] for split in d.values() for s in split.series]
    assert min(lengths) == 7 and max(lengths) == 29
    assert all(s.shape[0] == 12 for s in d["train"].series)
    assert sorted(set(d["train"].labels)) == [str(i) for i in range(1, 10)]


def test_corrupt_series_detected(japanese_vowels_asset, tmp_path):
    bad = corrupt_copy(japanese_vowels_asset, tmp_path, SERIES_FILE)
    with pytest.raises(AssetError, match=r"corrupt.*dvc repro assets-japanese-vowels"):
        load_time_series(bad)


def test_manifest_report_lists_every_prepared_asset(digits_asset, japanese_vowels_asset, asset_root, tmp_path):
    report = tmp_path / "manifest.md"
    report_run(None, ReportPaths(manifests=asset_root / "manifests", timings=asset_root / "timings", report=report),
               None)
    text = report.read_text()
    for name in ("digits", "japanese-vowels"):
        assert f"| {name} | `assets-{name}` |" in text
    assert "CC BY 4.0" in text and "preparation (s)" in text


def test_tla_tools_run_and_corruption_is_detected(tla_tools_asset, tmp_path):
    manifest = read_json(tla_tools_asset / "manifest.json")
    assert manifest["details"]["check_states"] == 4 and manifest["details"]["tlc_version"] == "2.15"
    assert load_tla_tools(tla_tools_asset).name == "tla2tools.jar"
    bad = corrupt_copy(tla_tools_asset, tmp_path, "tla2tools.jar")
    with pytest.raises(AssetError, match="corrupt"):
        load_tla_tools(bad)
