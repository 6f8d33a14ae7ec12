"""Great Expectations suites for the entropylong tables."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any


def documents_suite(max_tokens: int, min_tokens: int) -> list[Any]:
    """``documents``: unique ids, a split, between ``min_tokens`` and ``max_tokens`` entropy-model tokens."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["doc_id", "source", "article_id", "title", "split", "text",
                                                     "token_ids", "n_tokens"], exact_match=True),
        gxe.ExpectTableRowCountToBeBetween(min_value=2),
        gxe.ExpectColumnValuesToBeUnique(column="doc_id"),
        gxe.ExpectColumnValuesToBeInSet(column="split", value_set=["train", "heldout"]),
        gxe.ExpectColumnDistinctValuesToEqualSet(column="split", value_set=["train", "heldout"]),
        gxe.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=min_tokens, max_value=max_tokens),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
        *[gxe.ExpectColumnValuesToNotBeNull(column=c) for c in ("doc_id", "article_id", "title", "text")],
    ]


def token_entropy_suite(max_entropy: float) -> list[Any]:
    """``token_entropy``: H > 0 and below log |V| at every scored position."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectTableColumnsToMatchSet(column_set=["doc_id", "pos", "token_id", "entropy", "logprob", "z"],
                                         exact_match=True),
        gxe.ExpectColumnValuesToBeBetween(column="entropy", min_value=0, strict_min=True, max_value=max_entropy),
        gxe.ExpectColumnValuesToBeBetween(column="logprob", max_value=0),
        gxe.ExpectColumnValuesToBeBetween(column="pos", min_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "pos"]),
    ]


def positions_suite(doc_ids: Collection[str], min_z: float) -> list[Any]:
    """``positions``: every selected position passes the α threshold (z > α) and has a query."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeInSet(column="doc_id", value_set=sorted(doc_ids)),
        gxe.ExpectColumnValuesToBeBetween(column="z", min_value=min_z, strict_min=True),
        gxe.ExpectColumnValuesToBeBetween(column="entropy", min_value=0, strict_min=True),
        gxe.ExpectColumnValuesToBeBetween(column="rel_pos", min_value=0, max_value=1),
        gxe.ExpectColumnValueLengthsToBeBetween(column="query", min_value=1),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "pos"]),
    ]


def candidates_suite(top_k: int) -> list[Any]:
    """``candidates``: at most K ranked hits per position, cosine in [−1, 1], never the document's own article."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="rank", min_value=0, max_value=top_k - 1),
        gxe.ExpectColumnValuesToBeBetween(column="score", min_value=-1.0001, max_value=1.0001),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "pos", "chunk_id"]),
        gxe.ExpectColumnValuesToBeInSet(column="self_retrieval", value_set=[False]),
        gxe.ExpectColumnValueLengthsToBeBetween(column="text", min_value=1),
    ]


def verification_suite() -> list[Any]:
    """``verification``: H > 0, H′ ≥ 0, ΔI finite and ≤ 1 on every (document, candidate, position) row."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="h", min_value=0, strict_min=True),
        gxe.ExpectColumnValuesToBeBetween(column="h_ctx", min_value=0),
        gxe.ExpectColumnValuesToNotBeNull(column="delta_i"),
        gxe.ExpectColumnValuesToBeBetween(column="delta_i", min_value=-1e6, max_value=1),
        gxe.ExpectColumnValuesToNotBeNull(column="null_level"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "chunk_id", "pos"]),
    ]


def kept_suite(epsilon: float) -> list[Any]:
    """``kept``: every kept context has ΔI > ε at a main position it was retrieved for (never a null chunk)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="delta_i", min_value=epsilon, strict_min=True, max_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="retrieved_for", value_set=[True]),
        gxe.ExpectColumnValuesToBeInSet(column="null", value_set=[False]),
        gxe.ExpectColumnValuesToBeInSet(column="main", value_set=[True]),
        gxe.ExpectColumnPairValuesAToBeGreaterThanB(column_A="delta_i", column_B="null_level"),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "chunk_id", "pos"]),
    ]


def sequences_suite(target_len: int, vocab_size: int) -> list[Any]:
    """``sequences``: every training sequence has exactly ``target_len`` in-vocabulary tokens, document last."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=target_len, max_value=target_len),
        gxe.ExpectColumnValuesToBeBetween(column="max_token", min_value=0, max_value=vocab_size - 1),
        gxe.ExpectColumnValuesToBeBetween(column="doc_start", min_value=1, max_value=target_len - 2),
        gxe.ExpectColumnValuesToBeInSet(column="variant", value_set=["entropylong", "no_verification",
                                                                     "concatenation"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["variant", "doc_id", "copy"]),
    ]


def heldout_suite(target_len: int, vocab_size: int) -> list[Any]:
    """``heldout``: the shared evaluation triples (with / without verified contexts, random control)."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=2, max_value=target_len),
        gxe.ExpectColumnValuesToBeBetween(column="max_token", min_value=0, max_value=vocab_size - 1),
        gxe.ExpectColumnValuesToBeInSet(column="condition", value_set=["with_context", "without_context",
                                                                       "random_context"]),
        gxe.ExpectColumnValuesToBeBetween(column="n_contexts", min_value=0),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["doc_id", "condition"]),
    ]


def doc_losses_suite() -> list[Any]:
    """``doc_losses``: a finite, positive mean loss per (model, seed, document, condition) on both spans."""
    import great_expectations.expectations as gxe

    return [
        gxe.ExpectColumnValuesToBeBetween(column="all", min_value=0, max_value=50),
        gxe.ExpectColumnValuesToBeBetween(column="body", min_value=0, max_value=50),
        gxe.ExpectColumnValuesToBeBetween(column="n_tokens", min_value=1),
        gxe.ExpectColumnValuesToBeInSet(column="condition", value_set=["with_context", "without_context",
                                                                       "random_context"]),
        gxe.ExpectCompoundColumnsToBeUnique(column_list=["model", "seed_index", "doc_id", "condition"]),
    ]
