"""A small tokenizer trained here, for language models trained from scratch.

Models trained in this project use a small vocabulary (never the 49k SmolLM2 one). This
module trains one with the Hugging Face ``tokenizers`` library, deterministically, from
the texts a stage is given: a byte-level BPE (``kind="bpe"``, every string encodable, no
unknown token) or a character vocabulary (``kind="char"``, characters unseen in training
map to ``<unk>``). Special tokens come first, with fixed ids: ``<pad>`` = 0, ``<bos>`` = 1,
``<eos>`` = 2, ``<unk>`` = 3, then the caller's extra specials in the order given.

Usage::

    from stages.core.tokenizer import SmallTokenizer

    tok = SmallTokenizer.train(texts, vocab_size=2048, extra_specials=("<sep>",))
    tok.save("models/<paper>/tokenizer.json")           # atomic; one JSON file
    tok = SmallTokenizer.load("models/<paper>/tokenizer.json")
    ids = tok.encode("Paris is the capital.", add_bos=True, add_eos=True)
    text = tok.decode(ids)                               # specials skipped by default
    batch = tok.encode_batch(["a b", "c"])               # list of id lists
    words = tok.word_ids("Paris is big")                 # word index of each token
    tok.pad_id, tok.bos_id, tok.eos_id, tok.vocab_size, tok.token_id("<sep>")
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, Literal

from stages.core.io import InputError, write_text

PAD, BOS, EOS, UNK = "<pad>", "<bos>", "<eos>", "<unk>"
BASE_SPECIALS: tuple[str, ...] = (PAD, BOS, EOS, UNK)
_WORD = re.compile(r"\S+")


class SmallTokenizer:
    """A trained ``tokenizers.Tokenizer`` with fixed special-token ids and plain encode/decode."""

    def __init__(self, backend: Any) -> None:
        self.backend = backend
        for i, name in enumerate(BASE_SPECIALS):
            if backend.token_to_id(name) != i:
                raise ValueError(f"tokenizer must map special token {name} to id {i}")

    @classmethod
    def train(cls, texts: Iterable[str], vocab_size: int, kind: Literal["bpe", "char"] = "bpe",
              extra_specials: Sequence[str] = (), min_frequency: int = 2) -> SmallTokenizer:
        """Train a byte-level BPE (at most ``vocab_size`` ids) or a character vocabulary on ``texts``."""
        from tokenizers import Regex, Tokenizer, decoders, models, pre_tokenizers, trainers

        texts = [t for t in texts if t]
        if not texts:
            raise ValueError("cannot train a tokenizer on no text")
        specials = list(BASE_SPECIALS) + [s for s in extra_specials if s not in BASE_SPECIALS]
        if len(set(specials)) != len(specials):
            raise ValueError(f"duplicate special tokens in {list(extra_specials)}")
        if kind == "bpe":
            alphabet = pre_tokenizers.ByteLevel.alphabet()
            if vocab_size < len(specials) + len(alphabet):
                raise ValueError(f"vocab_size={vocab_size} is below the {len(specials) + len(alphabet)} "
                                 "byte-level base symbols + specials")
            backend = Tokenizer(models.BPE())
            backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
            backend.decoder = decoders.ByteLevel()
            trainer = trainers.BpeTrainer(vocab_size=vocab_size, min_frequency=min_frequency,
                                          special_tokens=specials, initial_alphabet=alphabet,
                                          show_progress=False)
            backend.train_from_iterator(texts, trainer=trainer)
        elif kind == "char":
            chars = sorted(set("".join(texts)))
            if vocab_size < len(specials) + len(chars):
                raise ValueError(f"vocab_size={vocab_size} is below the {len(chars)} characters + specials")
            vocab = {tok: i for i, tok in enumerate(specials + chars)}
            backend = Tokenizer(models.WordLevel(vocab=vocab, unk_token=UNK))
            backend.pre_tokenizer = pre_tokenizers.Split(Regex(r"[\s\S]"), behavior="isolated")
            backend.decoder = decoders.Fuse()
            backend.add_special_tokens(specials)
        else:
            raise ValueError(f"unknown tokenizer kind {kind!r} (expected 'bpe' or 'char')")
        return cls(backend)

    @classmethod
    def load(cls, path: Path | str) -> SmallTokenizer:
        """Read a tokenizer saved with :meth:`save`; :class:`InputError` naming the path if it is
        missing or not a tokenizer file (the library's own error does not name the file)."""
        from tokenizers import Tokenizer

        path = Path(path)
        if not path.is_file():
            raise InputError(f"{path}: missing (a tokenizer JSON file expected)")
        try:
            return cls(Tokenizer.from_file(str(path)))
        except Exception as err:  # the tokenizers library raises a bare Exception on a bad file
            first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
            raise InputError(f"{path}: not a readable tokenizer file (truncated or corrupt): {first}") from None

    def save(self, path: Path | str) -> None:
        """Write the tokenizer as one JSON file, atomically."""
        write_text(self.backend.to_str(pretty=True), path)

    @property
    def vocab_size(self) -> int:
        """Number of ids (specials included): the embedding size a model needs."""
        return self.backend.get_vocab_size(with_added_tokens=True)

    @property
    def pad_id(self) -> int:
        return 0

    @property
    def bos_id(self) -> int:
        return 1

    @property
    def eos_id(self) -> int:
        return 2

    @property
    def unk_id(self) -> int:
        return 3

    def token_id(self, token: str) -> int:
        """Id of a token (e.g. an extra special); KeyError if it is not in the vocabulary."""
        i = self.backend.token_to_id(token)
        if i is None:
            raise KeyError(f"token {token!r} is not in the vocabulary")
        return i

    def encode(self, text: str, add_bos: bool = False, add_eos: bool = False) -> list[int]:
        """Token ids of ``text``, optionally wrapped in ``<bos>`` / ``<eos>``."""
        ids = self.backend.encode(text, add_special_tokens=False).ids
        return [self.bos_id] * add_bos + ids + [self.eos_id] * add_eos

    def encode_batch(self, texts: Sequence[str], add_bos: bool = False, add_eos: bool = False) -> list[list[int]]:
        """:meth:`encode` of each text."""
        encs = self.backend.encode_batch(list(texts), add_special_tokens=False)
        return [[self.bos_id] * add_bos + e.ids + [self.eos_id] * add_eos for e in encs]

    def decode(self, ids: Sequence[int], skip_special: bool = True) -> str:
        """Text of ``ids``; special tokens dropped unless ``skip_special`` is False."""
        return self.backend.decode([int(i) for i in ids], skip_special_tokens=skip_special)

    def offsets(self, text: str) -> list[tuple[int, int]]:
        """Character span ``[start, end)`` in ``text`` of each token of ``encode(text)``."""
        return [tuple(o) for o in self.backend.encode(text, add_special_tokens=False).offsets]

    def word_ids(self, text: str) -> list[int | None]:
        """Index of the whitespace-separated word each token of ``encode(text)`` starts in (None: blank)."""
        starts, ends = [], []
        for m in _WORD.finditer(text):
            starts.append(m.start())
            ends.append(m.end())
        out: list[int | None] = []
        for s, e in self.offsets(text):
            first = next((k for k in range(s, e) if not text[k].isspace()), None)
            if first is None:
                out.append(None)
                continue
            w = bisect.bisect_right(starts, first) - 1
            out.append(w if w >= 0 and first < ends[w] else None)
        return out


def train_tokenizer(texts: Iterable[str], vocab_size: int, kind: Literal["bpe", "char"] = "bpe",
                    extra_specials: Sequence[str] = (), min_frequency: int = 2) -> SmallTokenizer:
    """Shortcut for :meth:`SmallTokenizer.train`."""
    return SmallTokenizer.train(texts, vocab_size, kind, extra_specials, min_frequency)


def load_tokenizer(path: Path | str) -> SmallTokenizer:
    """Shortcut for :meth:`SmallTokenizer.load`."""
    return SmallTokenizer.load(path)
