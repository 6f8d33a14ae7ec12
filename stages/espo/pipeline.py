"""espo in the DAG: tasks → supervised warm start → RL per objective → evaluation → report (read by ``make dag``)."""

STEPS = ("data", "warmstart", "rl", "evaluate", "report")
PATHS = {
    # data
    "sudoku": "data/espo/sudoku.parquet",
    "countdown": "data/espo/countdown.parquet",
    # warmstart writes `models` and `train_log`; rl, evaluate and report read the models as `warmstart`
    "models": "models/espo/warmstart",
    "train_log": "data/espo/warmstart_log.parquet",
    "warmstart": "models/espo/warmstart",
    # rl writes `models` (see STEP_PATHS) and `rl_log`; evaluate reads the models as `rl_models`
    "rl_log": "data/espo/rl_log.parquet",
    "rl_models": "models/espo/rl",
    # evaluate
    "evaluation": "data/espo/evaluation.json",
}
STEP_PATHS = {
    "rl": {"models": "models/espo/rl"},
}
