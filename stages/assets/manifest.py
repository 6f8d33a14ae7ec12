"""Asset manifests: what an asset is made of, where it came from, and its checksums."""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from stages.core.io import read_json, write_json

MANIFEST = "manifest.json"
_CHUNK = 1 << 20


class AssetError(RuntimeError):
    """An asset is missing, incomplete or corrupt; the message names the stage that makes it."""


def stage_name(asset: str) -> str:
    """The dvc.yaml stage that prepares ``asset``."""
    return f"assets-{asset}"


def repro_hint(asset: str) -> str:
    """The command that (re)builds an asset."""
    return f"run `dvc repro {stage_name(asset)}`"


def sha256_file(path: Path | str) -> str:
    """Hex sha256 of a file, read in 1 MiB chunks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        while block := fh.read(_CHUNK):
            digest.update(block)
    return digest.hexdigest()


def file_entries(root: Path, files: Iterable[Path]) -> dict[str, dict[str, Any]]:
    """``{relative path: {sha256, bytes}}`` for files under ``root``."""
    return {str(f.relative_to(root)): {"sha256": sha256_file(f), "bytes": f.stat().st_size}
            for f in sorted(files)}


def package_source(distribution: str) -> dict[str, str]:
    """Name, version and declared licence of an installed PyPI distribution (from its metadata)."""
    meta = importlib.metadata.metadata(distribution)
    declared = (meta.get("License-Expression") or meta.get("License") or "").strip().splitlines()
    classifiers = [c.split("::")[-1].strip() for c in meta.get_all("Classifier") or [] if c.startswith("License")]
    licence = declared[0] if declared and len(declared[0]) <= 80 else "; ".join(classifiers) or "unknown"
    return {"kind": "pypi", "package": distribution, "version": meta["Version"], "package_licence": licence}


def package_dir(module: str, asset: str, install_hint: str) -> Path:
    """The folder of an installed package, found without importing it."""
    spec = importlib.util.find_spec(module)
    if spec is None or not spec.submodule_search_locations:
        raise AssetError(f"asset '{asset}': package module '{module}' is not installed; {install_hint}")
    return Path(next(iter(spec.submodule_search_locations)))


def write_manifest(root: Path, asset: str, source: dict[str, Any], licence: str,
                   details: dict[str, Any] | None = None, report: Path | None = None) -> dict[str, Any]:
    """Checksum every file under ``root`` and write ``root/manifest.json`` (and a copy to ``report``)."""
    files = [p for p in root.rglob("*") if p.is_file() and p.name != MANIFEST]
    entries = file_entries(root, files)
    manifest = {"asset": asset, "stage": stage_name(asset), "source": source, "licence": licence,
                "details": details or {}, "files": entries,
                "size_bytes": sum(e["bytes"] for e in entries.values())}
    write_json(manifest, root / MANIFEST)
    if report is not None:
        write_json(manifest, report)
    return manifest


def read_manifest(root: Path | str, asset: str) -> dict[str, Any]:
    """The manifest of a prepared asset; AssetError naming the stage if it is absent."""
    root = Path(root)
    path = root / MANIFEST
    if not root.is_dir():
        raise AssetError(f"asset '{asset}' is missing: {root} does not exist; {repro_hint(asset)}")
    if not path.is_file():
        raise AssetError(f"asset '{asset}' is incomplete: {path} is missing; {repro_hint(asset)}")
    manifest = read_json(path)
    if manifest.get("asset") != asset:
        raise AssetError(f"{root} holds asset '{manifest.get('asset')}', not '{asset}'; {repro_hint(asset)}")
    return manifest


def verify_files(root: Path | str, asset: str, names: Iterable[str] | None = None) -> dict[str, Any]:
    """Check the sha256 of ``names`` (default: every file) against the manifest; return it."""
    root = Path(root)
    manifest = read_manifest(root, asset)
    wanted = list(names) if names is not None else list(manifest["files"])
    for name in wanted:
        entry = manifest["files"].get(name)
        path = root / name
        if entry is None:
            raise AssetError(f"asset '{asset}': {name} is not in {root / MANIFEST}; {repro_hint(asset)}")
        if not path.is_file():
            raise AssetError(f"asset '{asset}': {path} is missing; {repro_hint(asset)}")
        digest = sha256_file(path)
        if digest != entry["sha256"]:
            raise AssetError(f"asset '{asset}': {path} is corrupt (sha256 {digest[:12]}… != manifest "
                             f"{entry['sha256'][:12]}…); {repro_hint(asset)}")
    return manifest
