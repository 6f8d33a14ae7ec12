"""Great Expectations validation of pandas tables, with suites written in code.

``great_expectations`` is imported lazily: it takes seconds to import and most of the
process's life is spent elsewhere.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any


class DataValidationError(RuntimeError):
    """A table failed its expectation suite; the message names table, column and check."""


def _describe(result: Any) -> str:
    cfg = result.expectation_config
    column = cfg.kwargs.get("column") or cfg.kwargs.get("column_list") or "-"
    detail = result.result or {}
    if "partial_unexpected_list" in detail:
        extra = (f"{detail.get('unexpected_count')} unexpected of {detail.get('element_count')}, "
                 f"e.g. {detail['partial_unexpected_list'][:3]}")
    elif "observed_value" in detail:
        extra = f"observed {detail['observed_value']!r}"
    else:
        extra = "failed"
    return f"column '{column}': {cfg.type} ({extra})"


def validate_table(df: Any, table: str, suite: Callable[[], Sequence[Any]] | Sequence[Any]) -> None:
    """Validate ``df`` against the expectations; raise DataValidationError naming each failure."""
    import great_expectations as gx

    expectations = list(suite() if callable(suite) else suite)
    if not expectations:
        raise ValueError(f"empty expectation suite for table '{table}'")
    context = gx.get_context(mode="ephemeral")
    try:
        from great_expectations.data_context.types.base import ProgressBarsConfig

        context.variables.progress_bars = ProgressBarsConfig(globally=False)
    except (ImportError, AttributeError):
        pass
    batch = (context.data_sources.add_pandas("pandas")
             .add_dataframe_asset(name=table)
             .add_batch_definition_whole_dataframe("whole")
             .get_batch(batch_parameters={"dataframe": df}))
    result = batch.validate(gx.ExpectationSuite(name=f"{table}_suite", expectations=expectations))
    failures = [_describe(r) for r in result.results if not r.success]
    if failures:
        raise DataValidationError(f"table '{table}' failed validation: " + "; ".join(failures))
