import pandas as pd
import pytest

from stages.core.io import atomic_dir, atomic_path, read_json, read_parquet, write_json, write_parquet


def test_failed_write_leaves_nothing(tmp_path):
    target = tmp_path / "sub" / "table.parquet"
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("half a table")
        raise RuntimeError("interrupted")
    assert not target.exists()
    assert list(target.parent.iterdir()) == []


def test_failed_write_keeps_previous_version(tmp_path):
    target = tmp_path / "m.json"
    write_json({"a": 1}, target)
    with pytest.raises(RuntimeError), atomic_path(target) as tmp:
        tmp.write_text("{broken")
        raise RuntimeError
    assert read_json(target) == {"a": 1}


def test_atomic_dir_replaces_whole_folder(tmp_path):
    target = tmp_path / "plots"
    with atomic_dir(target) as tmp:
        (tmp / "a.png").write_bytes(b"x")
    with pytest.raises(ValueError), atomic_dir(target) as tmp:
        (tmp / "b.png").write_bytes(b"y")
        raise ValueError
    assert [p.name for p in target.iterdir()] == ["a.png"]


def test_json_writes_nan_as_null_and_parquet_roundtrips(tmp_path):
    write_json({"x": float("nan"), "y": [1.5, float("inf")]}, tmp_path / "a.json")
    assert read_json(tmp_path / "a.json") == {"x": None, "y": [1.5, None]}
    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"]})
    write_parquet(df, tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "t.parquet"), df, check_dtype=False)


def test_canonical_safetensors_sorts_the_header_and_keeps_offsets():
    import json as _json

    from stages.core.io import canonical_safetensors

    def file_with(header: dict) -> bytes:
        text = _json.dumps(header).encode()
        text += b" " * (-len(text) % 8)
        return len(text).to_bytes(8, "little") + text + b"\x00" * 8

    tensor = {"dtype": "F32", "shape": [2], "data_offsets": [0, 8]}
    a = file_with({"__metadata__": {"z": "1", "a": "2"}, "w": tensor})
    b = file_with({"w": tensor, "__metadata__": {"a": "2", "z": "1"}})
    assert a != b and canonical_safetensors(a) == canonical_safetensors(b)
    assert len(canonical_safetensors(a)) == len(a) and canonical_safetensors(a).endswith(b"\x00" * 8)


# ---- reads that name the file, refusing non-finite numbers, normal modes, stray temporaries

def _truncated(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep(len(data))])
    return path


def test_truncated_or_missing_inputs_raise_input_error_naming_the_path(tmp_path):
    import torch

    from stages.core.io import InputError, load_safetensors, save_safetensors

    write_parquet(pd.DataFrame({"a": list(range(100))}), tmp_path / "t.parquet")
    write_json({"a": [1, 2, 3]}, tmp_path / "m.json")
    save_safetensors({"w": torch.ones(16)}, tmp_path / "w.safetensors")
    cases = [
        (read_parquet, _truncated(tmp_path / "t.parquet", lambda n: n // 2), "not a readable Parquet table"),
        (read_json, _truncated(tmp_path / "m.json", lambda n: n - 4), "not JSON"),
        (load_safetensors, _truncated(tmp_path / "w.safetensors", lambda n: n - 8), "not a readable safetensors"),
        (load_safetensors, _truncated(tmp_path / "w.safetensors", lambda n: 4), "not a readable safetensors"),
        (read_parquet, tmp_path / "absent.parquet", "missing"),
        (read_json, tmp_path / "absent.json", "missing"),
        (load_safetensors, tmp_path / "absent.safetensors", "missing"),
    ]
    for reader, path, what in cases:
        with pytest.raises(InputError) as info:
            reader(path)
        message = str(info.value)
        assert message.startswith(f"{path}: {what}") and "\n" not in message, message


def test_write_json_can_refuse_non_finite_numbers_naming_file_and_key(tmp_path):
    import numpy as np

    from stages.core.io import NonFiniteError

    target = tmp_path / "metrics.json"
    with pytest.raises(NonFiniteError, match=r"metrics\.json: non-finite value at 'per_seed\.gap\[2\]'"):
        write_json({"ok": 1.0, "per_seed": {"gap": [0.1, 0.2, np.float32("nan")]}}, target, finite=True)
    assert not target.exists()
    with pytest.raises(NonFiniteError, match="at '<top level>'"):
        write_json(float("inf"), target, finite=True)
    write_json({"a": [1.0, 2], "b": "x"}, target, finite=True)  # finite numbers pass, same bytes as default
    assert target.read_text() == '{\n  "a": [\n    1.0,\n    2\n  ],\n  "b": "x"\n}\n'


@pytest.fixture
def umask():
    import os

    def set_mask(mask):
        os.umask(mask)

    old = os.umask(0o022)
    yield set_mask
    os.umask(old)


def test_outputs_get_normal_modes_under_the_umask(tmp_path, umask):
    import stat

    import torch

    from stages.core.io import save_safetensors

    def mode(p):
        return stat.S_IMODE(p.stat().st_mode)

    write_json({"a": 1}, tmp_path / "a.json")
    write_parquet(pd.DataFrame({"a": [1]}), tmp_path / "t.parquet")
    save_safetensors({"w": torch.zeros(2)}, tmp_path / "w.safetensors")
    with atomic_dir(tmp_path / "model") as tmp:
        (tmp / "x.bin").write_bytes(b"x")
    assert [mode(tmp_path / n) for n in ("a.json", "t.parquet", "w.safetensors")] == [0o644] * 3
    assert mode(tmp_path / "model") == 0o755 and mode(tmp_path / "model" / "x.bin") == 0o644
    umask(0o077)  # a stricter umask is respected
    write_json({"a": 1}, tmp_path / "private.json")
    with atomic_dir(tmp_path / "private") as tmp:
        pass
    assert mode(tmp_path / "private.json") == 0o600 and mode(tmp_path / "private") == 0o700


def test_sweep_temp_removes_only_the_writers_temporaries(tmp_path):
    from stages.core.io import sweep_temp

    out = tmp_path / "model.safetensors"
    (tmp_path / ".model.safetensors.x.tmp").write_bytes(b"half")            # a killed atomic_path
    (tmp_path / ".model.safetensors.ab_12cd9.tmp").mkdir()                 # a killed atomic_dir
    (tmp_path / ".model.safetensors.ab_12cd9.tmp" / "part").write_bytes(b"")
    keep = [tmp_path / ".other.json.x.tmp", tmp_path / "model.safetensors.x.tmp", tmp_path / ".model.safetensors.tmp"]
    for p in keep:
        p.write_text("not ours")
    assert [p.name for p in sweep_temp([out])] == [".model.safetensors.ab_12cd9.tmp", ".model.safetensors.x.tmp"]
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(p.name for p in keep)
    assert sweep_temp([tmp_path / "absent" / "x.json"]) == []


def test_read_parquet_refuses_a_table_without_the_columns_the_caller_reads(tmp_path):
    from stages.core.io import InputError

    df = pd.DataFrame({"a": [1, 2], "b": ["x", "y"], "c": [0.5, 1.5]})
    write_parquet(df, tmp_path / "t.parquet")
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "t.parquet", columns=["c", "a"]), df)  # the whole table
    pd.testing.assert_frame_equal(read_parquet(tmp_path / "t.parquet", columns=[]), df)
    with pytest.raises(InputError) as info:
        read_parquet(tmp_path / "t.parquet", columns=["a", "d", "b", "e"])
    message = str(info.value)
    assert message.startswith(f"{tmp_path / 't.parquet'}: missing column(s) 'd', 'e'") and "\n" not in message
    _truncated(tmp_path / "t.parquet", lambda n: n // 2)
    with pytest.raises(InputError, match="not a readable Parquet table"):
        read_parquet(tmp_path / "t.parquet", columns=["a"])


def test_load_safetensors_refuses_non_finite_floats_naming_file_and_key(tmp_path):
    import torch

    from stages.core.io import NonFiniteError, load_safetensors, save_safetensors

    good = {"w": torch.randn(3, 2), "b": torch.zeros(2, dtype=torch.float16), "ids": torch.arange(4)}
    save_safetensors(good, tmp_path / "good.safetensors")
    loaded = load_safetensors(tmp_path / "good.safetensors")
    assert loaded.keys() == good.keys() and all(torch.equal(loaded[k], v) for k, v in good.items())
    for value in (float("nan"), float("inf"), float("-inf")):
        bad = {"a.ok": torch.ones(3), "layer.weight": torch.tensor([[1.0, value], [0.0, 2.0]]),
               "ids": torch.arange(2)}
        save_safetensors(bad, tmp_path / "bad.safetensors")
        with pytest.raises(NonFiniteError) as info:
            load_safetensors(tmp_path / "bad.safetensors")
        assert str(info.value).startswith(f"{tmp_path / 'bad.safetensors'}: tensor 'layer.weight' holds non-finite")
    opted_out = load_safetensors(tmp_path / "bad.safetensors", allow_non_finite=True)
    assert torch.isneginf(opted_out["layer.weight"][0, 1])
