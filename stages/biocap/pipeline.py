"""biocap in the DAG: specimens and texts → cached frozen features → projectors per arm → metrics → report."""

STEPS = ("data", "features", "train", "evaluate", "report")
PATHS = {
    # data
    "images": "data/biocap/images.npy",
    "specimens": "data/biocap/specimens.parquet",
    "taxa": "data/biocap/taxa.parquet",
    "texts": "data/biocap/texts.parquet",
    # features (frozen encoders from the assets)
    "image_encoder": "models/assets/efficientnet-lite0",
    "text_encoder": "models/assets/minilm-l6-v2",
    "features": "data/biocap/features.safetensors",
    # train
    "models": "models/biocap",
    "train_log": "data/biocap/train_log.parquet",
    # evaluate
    "results": "data/biocap/results.parquet",
    "evaluation": "data/biocap/evaluation.json",
}
