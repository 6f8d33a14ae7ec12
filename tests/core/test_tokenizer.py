"""The small tokenizer helper: deterministic training, round trips, specials, save/load, word ids."""

from __future__ import annotations

import pytest

from stages.core.tokenizer import SmallTokenizer, load_tokenizer, train_tokenizer

TEXTS = [
    "The quick brown fox jumps over the lazy dog.",
    "Paris is the capital of France; the capital is large.",
    "A tokenizer splits text into tokens, and tokens into ids.",
] * 5


@pytest.mark.parametrize("kind", ["bpe", "char"])
def test_round_trip_and_specials(kind):
    tok = train_tokenizer(TEXTS, vocab_size=300, kind=kind, extra_specials=("<sep>",))
    assert (tok.pad_id, tok.bos_id, tok.eos_id, tok.unk_id) == (0, 1, 2, 3)
    assert tok.token_id("<sep>") == 4
    text = "the capital of the fox"
    ids = tok.encode(text, add_bos=True, add_eos=True)
    assert ids[0] == tok.bos_id and ids[-1] == tok.eos_id
    assert all(0 <= i < tok.vocab_size for i in ids)
    assert tok.decode(ids) == text
    assert tok.decode(ids, skip_special=False).startswith("<bos>")
    assert tok.encode_batch([text, "fox"]) == [tok.encode(text), tok.encode("fox")]
    with pytest.raises(KeyError):
        tok.token_id("<nope>")


def test_bpe_merges_and_encodes_unseen_bytes():
    tok = train_tokenizer(TEXTS, vocab_size=320)
    assert 260 < tok.vocab_size <= 320
    assert len(tok.encode("the capital")) < len("the capital")  # merges learned
    unseen = "Zürich ☃"
    assert tok.decode(tok.encode(unseen)) == unseen  # byte-level: nothing is unknown


def test_char_unknown_maps_to_unk():
    tok = train_tokenizer(TEXTS, vocab_size=100, kind="char")
    assert len(tok.encode("fox")) == 3
    assert tok.encode("☃") == [tok.unk_id]


def test_training_is_deterministic_and_save_load(tmp_path):
    a = train_tokenizer(TEXTS, vocab_size=300)
    b = train_tokenizer(TEXTS, vocab_size=300)
    assert a.backend.to_str() == b.backend.to_str()
    path = tmp_path / "sub" / "tok.json"
    a.save(path)
    c = load_tokenizer(path)
    assert c.vocab_size == a.vocab_size
    assert c.encode("lazy dog jumps") == a.encode("lazy dog jumps")


def test_word_ids_and_offsets():
    tok = train_tokenizer(TEXTS, vocab_size=300)
    text = "quick  brown capitals"
    offs = tok.offsets(text)
    assert len(offs) == len(tok.encode(text))
    words = tok.word_ids(text)
    assert [w for w in words if w is not None] == sorted(w for w in words if w is not None)
    assert set(words) - {None} == {0, 1, 2}
    for (s, e), w in zip(offs, words, strict=True):
        if w is not None:
            assert text[s:e].strip() in text.split()[w]


def test_bad_arguments_refused():
    with pytest.raises(ValueError, match="vocab_size"):
        train_tokenizer(TEXTS, vocab_size=50)
    with pytest.raises(ValueError, match="no text"):
        train_tokenizer([], vocab_size=300)
    with pytest.raises(ValueError, match="kind"):
        SmallTokenizer.train(TEXTS, vocab_size=300, kind="word")  # type: ignore[arg-type]


def test_a_truncated_or_missing_tokenizer_file_is_refused_naming_it(tmp_path):
    from stages.core.io import InputError

    path = tmp_path / "tok.json"
    train_tokenizer(TEXTS, vocab_size=300).save(path)
    path.write_bytes(path.read_bytes()[: path.stat().st_size // 2])
    with pytest.raises(InputError, match=r"tok\.json: not a readable tokenizer file") as info:
        load_tokenizer(path)
    assert "\n" not in str(info.value)
    with pytest.raises(InputError, match=r"absent\.json: missing"):
        load_tokenizer(tmp_path / "absent.json")
