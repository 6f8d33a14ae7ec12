"""matrix_denoising in the DAG: its steps in order and where each named path lives (read by ``make dag``)."""

STEPS = ("data", "train", "flow_studies", "evaluate", "report")
PATHS = {
    "instances": "data/matrix_denoising/instances.parquet",
    "trajectories": "data/matrix_denoising/trajectories.parquet",
    "theory": "data/matrix_denoising/theory.parquet",
    "scaling": "data/matrix_denoising/scaling.parquet",
    "scan": "data/matrix_denoising/scan.parquet",
    "transition": "data/matrix_denoising/transition.parquet",
    "evaluation": "data/matrix_denoising/evaluation.json",
}
