"""mtd_mirror_descent in the DAG: its steps in order and where each named path lives (read by ``make dag``)."""

STEPS = ("data", "train", "evaluate", "report")
PATHS = {
    "pi": "data/mtd_mirror_descent/pi.parquet",
    "sequences": "data/mtd_mirror_descent/sequences.parquet",
    "tokens": "data/mtd_mirror_descent/tokens.parquet",
    "models": "models/mtd_mirror_descent",
    "train_log": "data/mtd_mirror_descent/train_log.parquet",
    "evaluation": "data/mtd_mirror_descent/evaluation.json",
}
