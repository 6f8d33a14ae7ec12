"""ndm in the DAG: its steps in order and where each named path lives (read by ``make dag``)."""

STEPS = ("toy", "prompts", "activations", "fit", "patch", "report")
PATHS = {
    "lm": "models/assets/smollm2-135m",
    "toy_results": "data/ndm/toy_results.parquet",
    "toy_curves": "data/ndm/toy_curves.parquet",
    "prompts": "data/ndm/prompts.parquet",
    "activations": "data/ndm/activations.safetensors",
    "competence": "data/ndm/competence.parquet",
    "subspaces": "models/ndm/subspaces.safetensors",
    "fit_curves": "data/ndm/fit_curves.parquet",
    "patch_effects": "data/ndm/patch_effects.parquet",
    "patch_prompts": "data/ndm/patch_prompts.parquet",
}
