"""fga in the DAG: splits + CLIP -> shifted views, encoded once -> prompts, tuning, test-time methods -> report."""

STEPS = ("pretrain", "views", "adapt", "report")
PATHS = {
    "images": "data/assets/fashion-mnist",
    "image_encoder": "models/assets/efficientnet-lite0",
    "text_encoder": "models/assets/minilm-l6-v2",
    "splits": "data/fga/splits.parquet",
    "clip": "models/fga/clip.safetensors",
    "clip_log": "data/fga/clip_log.parquet",
    "views": "data/fga/views.parquet",
    "embeddings": "data/fga/embeddings.safetensors",
    "results": "data/fga/results.parquet",
    "adaptation": "data/fga/adaptation.json",
}
