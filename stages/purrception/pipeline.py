"""purrception in the DAG: images → VQ tokenizer and feature net → flow models → FID curves → report (``make dag``)."""

STEPS = ("data", "tokenizer", "classifier", "train", "evaluate", "report")
PATHS = {
    # data (from the shared image asset)
    "asset": "data/assets/fashion-mnist",
    "images": "data/purrception/images.npy",
    "index": "data/purrception/images.parquet",
    # tokenizer
    "tokenizer": "models/purrception/tokenizer",
    "codes": "data/purrception/codes.parquet",
    "tokenizer_metrics": "data/purrception/tokenizer.json",
    # classifier (the feature net of the Fréchet distance)
    "classifier": "models/purrception/classifier",
    "classifier_metrics": "data/purrception/classifier.json",
    # train
    "generators": "models/purrception/generators",
    "train_log": "data/purrception/train_log.parquet",
    # evaluate
    "evaluation": "data/purrception/evaluation.json",
    "fid_curves": "data/purrception/fid_curves.parquet",
    "samples": "data/purrception/samples.npy",
}
