"""Atomic writers and plain readers: an output exists completely or not at all."""

from __future__ import annotations

import json
import math
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``path`` only on success."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        yield tmp
        if path.exists():
            shutil.rmtree(path)
        os.replace(tmp, path)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def _finite(obj: Any) -> Any:
    """JSON has no NaN/inf: write them as null so every reader can parse the file."""
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {str(k): _finite(v) for k, v in obj.items()}
    if isinstance(obj, list | tuple):
        return [_finite(v) for v in obj]
    if hasattr(obj, "item") and callable(obj.item):  # numpy scalars
        return _finite(obj.item())
    return obj


def write_json(obj: Any, path: Path | str) -> None:
    """Write ``obj`` as sorted, indented JSON, atomically."""
    text = json.dumps(_finite(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_text(text, path)


def read_json(path: Path | str) -> Any:
    """Read a JSON file."""
    return json.loads(Path(path).read_text())


def write_text(text: str, path: Path | str) -> None:
    """Write text atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_parquet(df: Any, path: Path | str) -> None:
    """Write a pandas DataFrame as Parquet (pyarrow), atomically, without the index."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False, engine="pyarrow")


def read_parquet(path: Path | str) -> Any:
    """Read a Parquet table into pandas."""
    import pandas as pd

    return pd.read_parquet(path, engine="pyarrow")


def save_safetensors(tensors: dict[str, Any], path: Path | str,
                     metadata: dict[str, str] | None = None) -> None:
    """Save a dict of torch tensors as safetensors, atomically."""
    from safetensors.torch import save_file

    with atomic_path(path) as tmp:
        save_file({k: v.contiguous() for k, v in tensors.items()}, str(tmp), metadata=metadata)


def load_safetensors(path: Path | str) -> dict[str, Any]:
    """Load a safetensors file into torch tensors."""
    from safetensors.torch import load_file

    return load_file(str(path))


def save_torch(obj: Any, path: Path | str) -> None:
    """``torch.save`` atomically (for checkpoints that are not plain tensor dicts)."""
    import torch

    with atomic_path(path) as tmp:
        torch.save(obj, tmp)


def remove_outputs(paths: Iterable[Path | str]) -> None:
    """Delete files or directories (used when a stage fails, so nothing partial stays)."""
    for p in map(Path, paths):
        if p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        elif p.exists() or p.is_symlink():
            p.unlink()
