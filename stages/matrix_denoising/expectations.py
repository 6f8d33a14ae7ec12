"""Great Expectations suites for the matrix_denoising tables."""

from __future__ import annotations

from typing import Any

# the columns of the tables that more than one step reads (readers ask for them by name)
INSTANCES_COLUMNS = ("instance", "lam", "seed_index", "matrix_seed", "init", "alpha_u", "alpha_v", "init_seed", "p",
                     "n")
TRAJECTORIES_COLUMNS = ("instance", "init", "t", "q_u", "q_v")
THEORY_COLUMNS = ("lam", "init", "t", "q_u", "q_v")


def instances_suite() -> list[Any]:
    """``instances``: one row per (matrix, initial condition); specs and seeds, no matrices."""
    import great_expectations.expectations as gxe

    cols = list(INSTANCES_COLUMNS)
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeBetween(column="lam", min_value=0, strict_min=True, max_value=100),
        gxe.ExpectColumnValuesToBeBetween(column="alpha_u", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="alpha_v", min_value=-1, max_value=1),
        gxe.ExpectColumnValuesToBeBetween(column="p", min_value=2),
        gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
        gxe.ExpectColumnValuesToBeBetween(column="matrix_seed", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["instance", "init"]),
    ]


def trajectories_suite() -> list[Any]:
    """``trajectories``: overlaps along RGD are cosines, so they lie in [-1, 1]."""
    import great_expectations.expectations as gxe

    cols = list(TRAJECTORIES_COLUMNS)
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeBetween(column="q_u", min_value=-1 - 1e-9, max_value=1 + 1e-9),
        gxe.ExpectColumnValuesToBeBetween(column="q_v", min_value=-1 - 1e-9, max_value=1 + 1e-9),
        gxe.ExpectColumnValuesToBeBetween(column="t", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["instance", "init", "t"]),
    ]


def theory_suite() -> list[Any]:
    """``theory``: the large-dimension overlaps, also cosines."""
    import great_expectations.expectations as gxe

    cols = list(THEORY_COLUMNS)
    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeBetween(column="q_u", min_value=-1 - 1e-6, max_value=1 + 1e-6),
        gxe.ExpectColumnValuesToBeBetween(column="q_v", min_value=-1 - 1e-6, max_value=1 + 1e-6),
    ]


def _overlap_bounds(cols: list[str]) -> list[Any]:
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=cols, exact_match=True),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in cols],
        gxe.ExpectColumnValuesToBeBetween(column="q_u", min_value=-1 - 1e-9, max_value=1 + 1e-9),
        gxe.ExpectColumnValuesToBeBetween(column="q_v", min_value=-1 - 1e-9, max_value=1 + 1e-9),
        gxe.ExpectColumnValuesToBeBetween(column="t", min_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="lam", min_value=0, strict_min=True, max_value=100),
    ]


def scaling_suite() -> list[Any]:
    """``scaling``: exact-flow overlaps at fixed times for each size n."""
    import great_expectations.expectations as gxe

    cols = ["n", "p", "lam", "seed_index", "init", "alpha_u", "alpha_v", "t", "q_u", "q_v"]
    return [*_overlap_bounds(cols),
            gxe.ExpectColumnValuesToBeBetween(column="n", min_value=2),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["n", "lam", "seed_index", "init", "t"])]


def scan_suite() -> list[Any]:
    """``scan``: trajectories of the initial-overlap ratio scan."""
    import great_expectations.expectations as gxe

    cols = ["lam", "seed_index", "ratio", "alpha_u", "alpha_v", "t", "q_u", "q_v"]
    return [*_overlap_bounds(cols),
            gxe.ExpectColumnValuesToBeBetween(column="alpha_u", min_value=-1, max_value=1),
            gxe.ExpectColumnValuesToBeBetween(column="ratio", min_value=0, strict_min=True),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["lam", "seed_index", "ratio", "t"])]


def transition_suite() -> list[Any]:
    """``transition``: one long-time overlap per (λ, seed, repeat)."""
    import great_expectations.expectations as gxe

    cols = ["p", "n", "lam", "seed_index", "repeat", "t", "q_u", "q_v"]
    return [*_overlap_bounds(cols),
            gxe.ExpectCompoundColumnsToBeUnique(column_list=["lam", "seed_index", "repeat"])]
