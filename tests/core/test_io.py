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
