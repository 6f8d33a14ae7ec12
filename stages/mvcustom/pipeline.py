"""mvcustom in the DAG: rendered scenes and subjects -> pre-trained denoiser -> customised arms -> report."""

STEPS = ("data", "pretrain", "evaluate", "report")
PATHS = {
    "views": "data/mvcustom/views.parquet",
    "renders": "data/mvcustom/renders.safetensors",
    "model": "models/mvcustom/denoiser.safetensors",
    "train_log": "data/mvcustom/train_log.parquet",
    "results": "data/mvcustom/results.parquet",
    "evaluation": "data/mvcustom/evaluation.json",
    "samples": "data/mvcustom/samples.safetensors",
}
