"""Atomic writers and checked readers: an output exists completely or not at all.

Writers go through a temporary ``.<name>.<random>.tmp`` file or folder beside the output,
renamed into place on success, with the modes of a plain write (files 0644, folders 0755
under umask 022). Readers raise :class:`InputError` naming the file and what is wrong with it
(missing, truncated or corrupt, not JSON) instead of a library traceback.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any


class InputError(ValueError):
    """An input file is missing or unreadable; the message names the path and what is wrong."""


class NonFiniteError(ValueError):
    """A number that must be finite is not; the message names the file and the key path."""


def _umask() -> int:
    """The process umask, read without changing it where /proc allows."""
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("Umask:"):
                return int(line.split()[1], 8)
    except (OSError, ValueError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def _file_mode() -> int:
    return 0o666 & ~_umask()


def _dir_mode() -> int:
    return 0o777 & ~_umask()


def _temp_pattern(name: str) -> re.Pattern[str]:
    # tempfile's random part is 8 characters of [a-z0-9_]; only what atomic_path/atomic_dir create matches
    return re.compile(rf"\.{re.escape(name)}\.[a-z0-9_]+\.tmp")


def sweep_temp(paths: Iterable[Path | str]) -> list[Path]:
    """Delete the stray temporaries of ``paths`` (left by a killed writer); the paths deleted."""
    removed = []
    for path in map(Path, paths):
        if not path.parent.is_dir():
            continue
        pattern = _temp_pattern(path.name)
        for stray in sorted(path.parent.iterdir()):
            if not pattern.fullmatch(stray.name):
                continue
            if stray.is_dir() and not stray.is_symlink():
                shutil.rmtree(stray)
            else:
                stray.unlink(missing_ok=True)
            removed.append(stray)
    return removed


@contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """Yield a temporary path beside ``path``; rename it into place only on success (mode 0666 & ~umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    try:
        yield tmp
        os.chmod(tmp, _file_mode())  # mkstemp makes it 0600; the writer may also have recreated it
        os.replace(tmp, path)
    finally:
        tmp.unlink(missing_ok=True)


@contextmanager
def atomic_dir(path: Path | str) -> Iterator[Path]:
    """Yield a temporary directory that replaces ``path`` only on success (mode 0777 & ~umask)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent))
    try:
        os.chmod(tmp, _dir_mode())  # mkdtemp makes it 0700
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


def _non_finite(obj: Any, where: str = "") -> str | None:
    """The key path of the first non-finite number in ``obj`` ('a.b[2]'), or None."""
    if hasattr(obj, "item") and callable(obj.item) and not isinstance(obj, dict | list | tuple):
        try:
            obj = obj.item()
        except (TypeError, ValueError):  # a numpy array of several values: json.dumps refuses it anyway
            return None
    if isinstance(obj, float):
        return None if math.isfinite(obj) else (where or "<top level>")
    if isinstance(obj, dict):
        for k, v in obj.items():
            found = _non_finite(v, f"{where}.{k}" if where else str(k))
            if found is not None:
                return found
    elif isinstance(obj, list | tuple):
        for i, v in enumerate(obj):
            found = _non_finite(v, f"{where}[{i}]")
            if found is not None:
                return found
    return None


def write_json(obj: Any, path: Path | str, *, finite: bool = False) -> None:
    """Write ``obj`` as sorted, indented JSON, atomically.

    JSON has no NaN/inf: by default they are written as null. With ``finite=True`` a non-finite
    number is refused instead (:class:`NonFiniteError` naming the file and the key path) and
    nothing is written; metrics writers use it so a diverged run fails where it diverged.
    """
    if finite:
        where = _non_finite(obj)
        if where is not None:
            raise NonFiniteError(f"{path}: non-finite value at '{where}' (refused: the numbers must be finite)")
    text = json.dumps(_finite(obj), indent=2, sort_keys=True, allow_nan=False) + "\n"
    write_text(text, path)


def _check_input(path: Path, kind: str) -> None:
    if not path.exists():
        raise InputError(f"{path}: missing ({kind} expected)")


def read_json(path: Path | str) -> Any:
    """Read a JSON file; :class:`InputError` naming the path if it is missing or not JSON."""
    path = Path(path)
    _check_input(path, "a JSON file")
    try:
        return json.loads(path.read_text())
    except (json.JSONDecodeError, UnicodeDecodeError) as err:
        raise InputError(f"{path}: not JSON (truncated or corrupt): {err}") from None
    except OSError as err:
        raise InputError(f"{path}: unreadable: {err.strerror or err}") from None


def write_text(text: str, path: Path | str) -> None:
    """Write text atomically."""
    with atomic_path(path) as tmp:
        tmp.write_text(text)


def write_parquet(df: Any, path: Path | str) -> None:
    """Write a pandas DataFrame as Parquet (pyarrow), atomically, without the index."""
    with atomic_path(path) as tmp:
        df.to_parquet(tmp, index=False, engine="pyarrow")


def read_parquet(path: Path | str, columns: Iterable[str] | None = None) -> Any:
    """Read a Parquet table into pandas; :class:`InputError` naming the path if it is missing or corrupt.

    ``columns``: the columns the caller reads. A table that lacks any of them is refused with
    :class:`InputError` naming the path and the missing columns; the whole table is returned either way.
    """
    import pandas as pd
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = Path(path)
    _check_input(path, "a Parquet table")
    wanted = [] if columns is None else list(columns)
    try:
        present = pq.read_schema(path).names if wanted else []
        df = pd.read_parquet(path, engine="pyarrow")
    except (pa.ArrowException, OSError, ValueError) as err:
        raise InputError(f"{path}: not a readable Parquet table (truncated or corrupt): "
                         f"{_first_line(err)}") from None
    missing = [c for c in wanted if c not in present]
    if missing:
        raise InputError(f"{path}: missing column(s) {', '.join(map(repr, missing))} "
                         f"(the table has {', '.join(map(repr, present))})")
    return df


def _first_line(err: BaseException) -> str:
    text = str(err).strip()
    return text.splitlines()[0] if text else type(err).__name__


def save_safetensors(tensors: dict[str, Any], path: Path | str,
                     metadata: dict[str, str] | None = None) -> None:
    """Save a dict of torch tensors as safetensors, atomically, with the same bytes on every run."""
    from safetensors.torch import save

    data = save({k: v.contiguous() for k, v in tensors.items()}, metadata=metadata)
    with atomic_path(path) as tmp:
        tmp.write_bytes(canonical_safetensors(data))


def canonical_safetensors(data: bytes) -> bytes:
    """The same file with its JSON header's keys sorted (the library writes metadata in a random order).

    Sorting keeps the header's length, so the tensors' byte offsets are unchanged.
    """
    n = int.from_bytes(data[:8], "little")
    header = json.loads(data[8:8 + n])
    if "__metadata__" in header:
        header["__metadata__"] = dict(sorted(header["__metadata__"].items()))
    text = json.dumps(dict(sorted(header.items())), separators=(",", ":")).encode()
    if len(text) > n:
        raise ValueError("canonical safetensors header is longer than the original")
    return data[:8] + text + b" " * (n - len(text)) + data[8 + n:]


def load_safetensors(path: Path | str, *, allow_non_finite: bool = False) -> dict[str, Any]:
    """Load a safetensors file into torch tensors; :class:`InputError` naming the path if missing or corrupt.

    A floating tensor holding NaN or inf is refused with :class:`NonFiniteError` naming the path and
    the tensor's key (weights of a diverged run must not reach results). ``allow_non_finite=True``
    skips that check, for a caller whose file may legitimately hold them (say why at the call site).
    """
    import torch
    from safetensors import SafetensorError
    from safetensors.torch import load_file

    path = Path(path)
    _check_input(path, "a safetensors file")
    try:
        tensors = load_file(str(path))
    except (SafetensorError, OSError, ValueError, RuntimeError) as err:
        raise InputError(f"{path}: not a readable safetensors file (truncated or corrupt): "
                         f"{_first_line(err)}") from None
    if not allow_non_finite:
        for key in sorted(tensors):
            t = tensors[key]
            if t.is_floating_point() and not bool(torch.isfinite(t).all()):
                raise NonFiniteError(f"{path}: tensor '{key}' holds non-finite values (NaN or inf); refused")
    return tensors


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


def remove_outputs_reporting(paths: Iterable[Path | str]) -> list[str]:
    """Delete every path it can (and its stray temporaries); 'path (error)' for each it could not."""
    failed = []
    for p in map(Path, paths):
        try:
            remove_outputs([p])
            sweep_temp([p])
        except OSError as err:
            failed.append(f"{p} ({err.strerror or type(err).__name__})")
    return failed
