"""detection_debias in the DAG: biased scenes -> baseline detector, RS and synthetic layouts -> detectors per
augmentation arm and their COCO AP per group -> report."""

STEPS = ("data", "baseline", "train", "report")
PATHS = {
    "objects": "data/detection_debias/objects.parquet",
    "images": "data/detection_debias/images.safetensors",
    "baseline": "models/detection_debias/baseline.safetensors",
    "groups": "data/detection_debias/groups.parquet",
    "layouts": "data/detection_debias/layouts.parquet",
    "baseline_log": "data/detection_debias/baseline_log.json",
    "models": "models/detection_debias/models.safetensors",
    "ap": "data/detection_debias/ap.parquet",
    "training": "data/detection_debias/training.json",
}
