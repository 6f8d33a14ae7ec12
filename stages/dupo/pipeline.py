"""dupo in the DAG: problems and duals → SFT on both tasks → GRPO per reward → evaluation → report."""

STEPS = ("data", "sft", "rl", "evaluate", "report")
PATHS = {
    "problems": "data/dupo/problems.parquet",
    "duals": "data/dupo/duals.parquet",
    # sft writes `models` and `sft_log`; rl and evaluate read the models as `sft`
    "models": "models/dupo/sft",
    "sft_log": "data/dupo/sft_log.parquet",
    "sft": "models/dupo/sft",
    "rl_log": "data/dupo/rl_log.parquet",
    "rl_models": "models/dupo/rl",
    "evaluation": "data/dupo/evaluation.json",
}
STEP_PATHS = {
    "rl": {"models": "models/dupo/rl"},
    # the report reads the SFT manifest only: it depends on that file, not on the weights
    "report": {"sft": "models/dupo/sft/manifest.json"},
}
