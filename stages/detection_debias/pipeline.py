"""detection_debias in the DAG: biased scenes -> blueprint generator; biased scenes -> baseline detector, RS and
synthetic layouts; both -> detectors per augmentation arm, their COCO AP per group and the generator's layout
accuracy -> report."""

STEPS = ("data", "generator", "baseline", "train", "report")
PATHS = {
    "objects": "data/detection_debias/objects.parquet",
    "images": "data/detection_debias/images.safetensors",
    "baseline": "models/detection_debias/baseline.safetensors",
    "generator": "models/detection_debias/generator.safetensors",
    "generator_log": "data/detection_debias/generator_log.json",
    "groups": "data/detection_debias/groups.parquet",
    "layouts": "data/detection_debias/layouts.parquet",
    "baseline_log": "data/detection_debias/baseline_log.json",
    "models": "models/detection_debias/models.safetensors",
    "ap": "data/detection_debias/ap.parquet",
    "training": "data/detection_debias/training.json",
}
