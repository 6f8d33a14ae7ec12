"""denots in the DAG: its steps in order and where each named path lives (read by ``make dag``)."""

STEPS = ("data", "train", "evaluate", "report")
PATHS = {
    "vowels_asset": "data/assets/japanese-vowels",
    "datasets": "data/denots/datasets",
    "models": "models/denots",
    "runs": "data/denots/runs.parquet",
    "train_log": "data/denots/train_log.parquet",
    "results": "data/denots/results.parquet",
    "evaluation": "data/denots/evaluation.json",
}
