"""m3cotbench in the DAG: scans -> trained models and reasoners' outputs -> matcher and scores -> report."""

STEPS = ("data", "train", "score", "report")
PATHS = {
    "scenes": "data/m3cotbench/scenes.parquet",
    "images": "data/m3cotbench/images.safetensors",
    "models": "models/m3cotbench/models.safetensors",
    "outputs": "data/m3cotbench/outputs.parquet",
    "training": "data/m3cotbench/training.json",
    "text_encoder": "models/assets/minilm-l6-v2",
    "scores": "data/m3cotbench/scores.parquet",
    "matcher": "data/m3cotbench/matcher.json",
}
