"""Helpers of the asset tests; the asset fixtures themselves live in ``tests/asset_fixtures.py``."""

from __future__ import annotations

import shutil
from pathlib import Path


def corrupt_copy(src: Path, dst_parent: Path, name: str) -> Path:
    """A copy of an asset folder with one byte of ``name`` flipped."""
    dst = dst_parent / src.name
    shutil.copytree(src, dst)
    path = dst / name
    data = bytearray(path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    path.write_bytes(bytes(data))
    return dst
