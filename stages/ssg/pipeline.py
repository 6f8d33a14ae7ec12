"""ssg in the DAG: images → multi-scale VQ tokenizer → next-scale transformers → sampling arms → report."""

STEPS = ("data", "tokenizer", "train", "evaluate", "report")
PATHS = {
    # data (from the shared image asset)
    "asset": "data/assets/fashion-mnist",
    "images": "data/ssg/images.npy",
    "index": "data/ssg/images.parquet",
    # tokenizer
    "tokenizer": "models/ssg/tokenizer",
    "tokens": "data/ssg/tokens.parquet",
    "tokenizer_metrics": "data/ssg/tokenizer.json",
    # train
    "var": "models/ssg/var",
    "train_log": "data/ssg/train_log.parquet",
    # evaluate (the Fréchet features: purrception's Fashion-MNIST classifier)
    "classifier": "models/purrception/classifier",
    "results": "data/ssg/results.parquet",
    "evaluation": "data/ssg/evaluation.json",
    "samples": "data/ssg/samples.npy",
}
STEP_PATHS = {
    # the report reads the transformers' manifest only: it depends on that file, not on the weights
    "report": {"var_manifest": "models/ssg/var/manifest.json"},
}
