"""Token ids of the templated prompts under the LM's tokenizer, grouped so batches need no padding."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pandas as pd
import torch


def answer_ids(tokenizer: Any, answers: list[str]) -> list[int]:
    """The single token id of each answer string (an answer that is not one token is an error)."""
    ids = []
    for a in answers:
        toks = tokenizer(a, add_special_tokens=False)["input_ids"]
        if len(toks) != 1:
            raise ValueError(f"answer {a!r} is {len(toks)} tokens, not one")
        ids.append(int(toks[0]))
    return ids


def encode(tokenizer: Any, text: str) -> list[int]:
    """The prompt's token ids."""
    return [int(t) for t in tokenizer(text)["input_ids"]]


def same_length_batches(ids: list[list[int]], batch_size: int) -> Iterator[tuple[list[int], torch.Tensor]]:
    """(row indices, id tensor) batches of equal-length sequences, in a fixed order."""
    frame = pd.DataFrame({"i": range(len(ids)), "n": [len(x) for x in ids]})
    for _, group in frame.groupby("n", sort=True):
        rows = group.i.tolist()
        for start in range(0, len(rows), batch_size):
            chunk = rows[start:start + batch_size]
            yield chunk, torch.tensor([ids[i] for i in chunk])
