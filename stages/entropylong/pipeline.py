"""entropylong in the DAG: its steps in order and where each named path lives (read by ``make dag``)."""

STEPS = ("entropy", "retrieve", "verify", "construct", "train", "evaluate", "report")
PATHS = {
    # shared assets (stages/assets/)
    "wikipedia": "data/assets/wikipedia",
    "enwiki": "data/assets/enwiki",
    "entropy_model": "models/assets/smollm2-135m",
    "index": "data/assets/wikipedia-index",
    "encoder": "models/assets/minilm-l6-v2",
    # entropy -> retrieve -> verify: documents, positions, candidate contexts, ΔI
    "documents": "data/entropylong/documents.parquet",
    "token_entropy": "data/entropylong/token_entropy.parquet",
    "positions": "data/entropylong/positions.parquet",
    "candidates": "data/entropylong/candidates.parquet",
    "verification": "data/entropylong/verification.parquet",
    "kept": "data/entropylong/kept.parquet",
    # construct -> train -> evaluate: sequences, adapters, metrics
    "sequences": "data/entropylong/sequences.parquet",
    "heldout": "data/entropylong/heldout.parquet",
    "validation": "data/entropylong/validation.parquet",
    "models": "models/entropylong/lm",
    "train_log": "data/entropylong/train_log.parquet",
    "evaluation": "data/entropylong/evaluation.json",
    "doc_losses": "data/entropylong/doc_losses.parquet",
}
