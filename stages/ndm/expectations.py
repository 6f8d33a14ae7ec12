"""Great Expectations suites for the ndm tables."""

from __future__ import annotations

from typing import Any


def _columns(cols: list[str]) -> list[Any]:
    import great_expectations.expectations as gxe

    return [gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
            *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols]]


def toy_results_suite() -> list[Any]:
    """``toy_results``: one row per (seed, method); ARI in [-1, 1], shares in [0, 1]."""
    import great_expectations.expectations as gxe

    cols = ["seed", "method", "ari", "energy_concentration", "dimension_purity", "n_subspaces", "sizes",
            "ae_loss", "n_merges"]
    return [*_columns(cols),
            gxe.ExpectColumnValuesToBeInSet(column="method", value_set=["ndm", "identity", "random", "pca", "oracle"]),
            gxe.ExpectColumnValuesToBeBetween(column="ari", min_value=-1.0, max_value=1.0 + 1e-9),
            gxe.ExpectColumnValuesToBeBetween(column="energy_concentration", min_value=0.0, max_value=1.0 + 1e-9),
            gxe.ExpectColumnValuesToBeBetween(column="dimension_purity", min_value=0.0, max_value=1.0 + 1e-9),
            gxe.ExpectColumnValuesToBeBetween(column="n_subspaces", min_value=1),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed", "method"])]


def curves_suite() -> list[Any]:
    """``toy_curves`` / ``fit_curves``: finite non-negative NDM losses."""
    import great_expectations.expectations as gxe

    return [*_columns(["seed", "step", "loss"]),
            gxe.ExpectColumnValuesToBeBetween(column="loss", min_value=0.0, max_value=1e9),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed", "step"])]


def prompts_suite() -> list[Any]:
    """``prompts``: distinct texts, two splits, two tasks."""
    import great_expectations.expectations as gxe

    cols = ["prompt_id", "split", "task", "text", "corrupted", "good", "bad"]
    return [*_columns(cols),
            gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["fit", "patch"]),
            gxe.ExpectColumnValuesToBeInSet(column="task", value_set=["ioi", "greater_than"]),
            gxe.ExpectColumnValuesToBeUnique(column="prompt_id"),
            gxe.ExpectColumnValuesToBeUnique(column="text")]


def competence_suite() -> list[Any]:
    """``competence``: the clean logit difference of each patching prompt and the keep flag."""
    import great_expectations.expectations as gxe

    return [*_columns(["prompt_id", "task", "clean_ld", "kept"]),
            gxe.ExpectColumnValuesToBeBetween(column="clean_ld", min_value=-1e4, max_value=1e4),
            gxe.ExpectColumnValuesToBeUnique(column="prompt_id")]


def effects_suite() -> list[Any]:
    """``patch_effects``: one finite effect per (seed, method, prompt, subspace)."""
    import great_expectations.expectations as gxe

    return [*_columns(["seed", "method", "prompt_id", "task", "subspace", "size", "effect"]),
            gxe.ExpectColumnValuesToBeBetween(column="effect", min_value=-1e4, max_value=1e4),
            gxe.ExpectColumnValuesToBeBetween(column="size", min_value=1),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed", "method", "prompt_id", "subspace"])]


def patch_prompts_suite() -> list[Any]:
    """``patch_prompts``: Gini in [0, 1] per (seed, method, prompt)."""
    import great_expectations.expectations as gxe

    cols = ["seed", "method", "prompt_id", "task", "clean_ld", "full_patch_ld", "sum_abs_effect", "gini"]
    return [*_columns(cols),
            gxe.ExpectColumnValuesToBeBetween(column="gini", min_value=0.0, max_value=1.0),
            gxe.ExpectColumnValuesToBeBetween(column="clean_ld", min_value=0.0, strict_min=True, max_value=1e4),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["seed", "method", "prompt_id"])]
