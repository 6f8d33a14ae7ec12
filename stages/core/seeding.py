"""Seeds and thread counts: same params on the same machine give the same numbers."""

from __future__ import annotations

import hashlib
import os
import random
import sys

import numpy as np

_THREAD_ENV = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS", "NUMEXPR_NUM_THREADS")


def derive_seed(seed: int, *keys: str | int) -> int:
    """A stable 63-bit seed from a global seed and names (never Python's salted hash)."""
    text = "/".join([str(seed), *map(str, keys)]).encode()
    return int.from_bytes(hashlib.blake2b(text, digest_size=8).digest(), "little") >> 1


def rng(seed: int, *keys: str | int) -> np.random.Generator:
    """A numpy Generator for one named purpose, independent of every other purpose."""
    return np.random.default_rng(derive_seed(seed, *keys))


def seed_everything(seed: int) -> None:
    """Seed Python, numpy's legacy global state, and torch if it is already imported."""
    random.seed(seed)
    np.random.seed(seed % 2**32)
    if "torch" in sys.modules:
        sys.modules["torch"].manual_seed(seed)


def apply_threads(threads: int) -> None:
    """Fix the BLAS/OpenMP/torch thread counts (they change floating-point sums)."""
    for key in _THREAD_ENV:
        os.environ[key] = str(threads)
    from threadpoolctl import threadpool_limits

    threadpool_limits(threads)
    if "torch" in sys.modules:
        sys.modules["torch"].set_num_threads(threads)
