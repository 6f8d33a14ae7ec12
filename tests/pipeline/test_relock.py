"""stages/relock.py: an output-neutral code change recorded in dvc.lock on a clone that holds no outputs."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import yaml

from stages.relock import compare, main, record
from tests.flows.conftest import BIN, git, run

DVC_YAML = {"stages": {
    "a": {"cmd": "python a.py", "deps": ["a.py"], "params": ["a.n"], "outs": ["data/a.txt"]},
    "b": {"cmd": "python b.py", "deps": ["b.py", "data/a.txt"], "params": ["b"],
          "outs": [{"reports/b.txt": {"cache": False}}]},
}}
A_PY = "import yaml\nn = yaml.safe_load(open('params.yaml'))['a']['n']\nopen('data/a.txt', 'w').write('x' * n)\n"
B_PY = ("import os\nos.makedirs('reports', exist_ok=True)\n"
        "open('reports/b.txt', 'w').write(open('data/a.txt').read() * 2)\n")


def _status(repo: Path) -> str:
    return run([str(BIN / "dvc"), "status"], repo).stdout


def _repo(dest: Path) -> Path:
    """A git + DVC repo with two stages run once, then its data outputs and cache deleted (a fresh clone)."""
    dest.mkdir()
    (dest / "dvc.yaml").write_text(yaml.safe_dump(DVC_YAML, sort_keys=False))
    (dest / "params.yaml").write_text(yaml.safe_dump({"a": {"n": 3}, "b": {"k": 1}}))
    (dest / "a.py").write_text(A_PY)
    (dest / "b.py").write_text(B_PY)
    (dest / "data").mkdir()
    run(["git", "init", "-q"], dest)
    run([str(BIN / "dvc"), "init", "-q"], dest)
    run([str(BIN / "dvc"), "repro"], dest)
    git(dest, "add", "-A")
    git(dest, "commit", "-qm", "results")
    shutil.rmtree(dest / ".dvc" / "cache")
    (dest / "data" / "a.txt").unlink()
    return dest


def _lock(repo: Path) -> dict:
    return yaml.safe_load((repo / "dvc.lock").read_text())["stages"]


def test_a_code_change_is_recorded_and_the_locked_outputs_are_kept(tmp_path):
    repo = _repo(tmp_path / "r")
    before = _lock(repo)
    assert "modified" not in _status(repo)  # only the absent outputs
    (repo / "b.py").write_text("# a comment changes no output\n" + B_PY)
    (repo / "a.py").write_text("# so does this one\n" + A_PY)
    status = _status(repo)
    assert "modified:           b.py" in status and "modified:           a.py" in status
    assert record(repo, ["b"]) == ["b"]
    after = _lock(repo)
    assert after["b"]["outs"] == before["b"]["outs"]
    assert after["a"] == before["a"]  # a stage not named is left alone
    status = _status(repo)
    assert "b.py" not in status and "modified:           a.py" in status
    assert main(["record", "--all", "--root", str(repo)]) == 0
    assert "modified" not in _status(repo)
    assert _lock(repo)["a"]["outs"] == before["a"]["outs"]


def test_a_params_change_is_recorded_with_its_value(tmp_path):
    repo = _repo(tmp_path / "r")
    (repo / "params.yaml").write_text(yaml.safe_dump({"a": {"n": 3}, "b": {"k": 1, "note": "x"}}))
    assert "modified:           b" in _status(repo)
    record(repo, ["b"])
    assert _lock(repo)["b"]["params"] == {"params.yaml": {"b": {"k": 1, "note": "x"}}}
    assert "modified" not in _status(repo)


def test_recording_twice_keeps_floats_without_a_dot_as_dvc_reads_them(tmp_path):
    """`1e-05` is a float to DVC (YAML 1.2) but a string to PyYAML: a second record must not quote it."""
    repo = _repo(tmp_path / "r")
    (repo / "params.yaml").write_text("a: {n: 3}\nb: {k: 1, tol: 1e-05}\n")
    record(repo, ["b"])
    first = (repo / "dvc.lock").read_text()
    assert "modified" not in _status(repo)
    record(repo, ["a", "b"])
    assert (repo / "dvc.lock").read_text() == first
    assert "'1e-05'" not in first and "modified" not in _status(repo)


def test_a_section_two_stages_read_is_written_out_in_each_entry_not_as_a_yaml_anchor(tmp_path):
    repo = _repo(tmp_path / "r")
    spec = yaml.safe_load((repo / "dvc.yaml").read_text())
    spec["stages"]["a"]["params"] = ["a"]
    spec["stages"]["b"]["params"] = ["a", "b"]
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    record(repo, ["a", "b"])
    text = (repo / "dvc.lock").read_text()
    assert "&id" not in text and "*id" not in text
    assert _lock(repo)["b"]["params"] == {"params.yaml": {"a": {"n": 3}, "b": {"k": 1}}}
    assert "modified" not in _status(repo)


def test_unknown_stages_and_missing_deps_are_refused_before_the_lock_is_written(tmp_path):
    repo = _repo(tmp_path / "r")
    text = (repo / "dvc.lock").read_text()
    with pytest.raises(SystemExit, match="not a locked stage"):
        record(repo, ["c"])
    (repo / "b.py").unlink()
    with pytest.raises(SystemExit, match=r"b: dep b\.py is neither a file here"):
        record(repo, ["b"])
    assert (repo / "dvc.lock").read_text() == text


def test_compare_tells_a_changed_result_from_a_changed_timing(tmp_path):
    def workspace(name: str, data_md5: str, timing_md5: str) -> Path:
        root = tmp_path / name
        root.mkdir()
        lock = {"schema": "2.0", "stages": {"p-train": {"cmd": "x", "outs": [
            {"path": "data/p/model.safetensors", "md5": data_md5},
            {"path": "reports/p/timings/train.json", "md5": timing_md5}]}}}
        (root / "dvc.lock").write_text(yaml.safe_dump(lock))
        return root

    old, same, moved = workspace("old", "aa", "t1"), workspace("same", "aa", "t2"), workspace("moved", "bb", "t1")
    assert compare(old, same) == ([], ["p-train: reports/p/timings/train.json"], 1)
    assert main(["compare", str(old), str(same)]) == 0
    assert compare(old, moved)[0] == ["p-train: data/p/model.safetensors"]
    assert main(["compare", str(old), str(moved)]) == 1
    assert main(["compare", str(old), str(moved), "q-"]) == 1  # nothing compared is no proof


def test_a_dep_on_one_file_of_another_stages_output_folder_keeps_its_locked_hash(tmp_path):
    repo = tmp_path / "r"
    repo.mkdir()
    spec = {"stages": {
        "m": {"cmd": "python m.py", "deps": ["m.py"], "outs": ["models/m"]},
        "r": {"cmd": "python r.py", "deps": ["models/m/manifest.json", "r.py"],
              "outs": [{"reports/r.txt": {"cache": False}}]},
    }}
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (repo / "params.yaml").write_text("{}\n")
    (repo / "m.py").write_text("import os\nos.makedirs('models/m', exist_ok=True)\n"
                               "open('models/m/manifest.json', 'w').write('{}')\n"
                               "open('models/m/w.bin', 'w').write('weights')\n")
    (repo / "r.py").write_text("import os\nos.makedirs('reports', exist_ok=True)\n"
                               "open('reports/r.txt', 'w').write(open('models/m/manifest.json').read())\n")
    run(["git", "init", "-q"], repo)
    run([str(BIN / "dvc"), "init", "-q"], repo)
    run([str(BIN / "dvc"), "repro"], repo)
    before = _lock(repo)["r"]
    shutil.rmtree(repo / ".dvc" / "cache")
    shutil.rmtree(repo / "models")  # a fresh clone: the manifest is not on disk
    (repo / "r.py").write_text("# a comment\n" + (repo / "r.py").read_text())
    assert record(repo, ["r"]) == ["r"]
    after = _lock(repo)["r"]
    manifest = next(d for d in after["deps"] if d["path"] == "models/m/manifest.json")
    assert manifest == next(d for d in before["deps"] if d["path"] == "models/m/manifest.json")
    assert after["outs"] == before["outs"]
    assert "modified" not in _status(repo)


def test_params_from_several_files_are_recorded_under_each_file(tmp_path):
    """The split layout: global keys in params.yaml, a paper's sections in params/<paper>.yaml."""
    repo = tmp_path / "r"
    repo.mkdir()
    spec = {"stages": {"a": {"cmd": "python a.py", "deps": ["a.py"],
                             "params": ["seed", {"params/a.yaml": ["train", "data.n"]}], "outs": ["data/a.txt"]}}}
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (repo / "params.yaml").write_text("seed: 0\n")
    (repo / "params").mkdir()
    (repo / "params" / "a.yaml").write_text("data: {n: 3, m: 1}\ntrain: {lr: 1e-05, sizes: [1, 2]}\n")
    (repo / "a.py").write_text("import os\nos.makedirs('data', exist_ok=True)\nopen('data/a.txt', 'w').write('x')\n")
    run(["git", "init", "-q"], repo)
    run([str(BIN / "dvc"), "init", "-q"], repo)
    run([str(BIN / "dvc"), "repro"], repo)
    locked = _lock(repo)["a"]["params"]
    (repo / "params" / "a.yaml").write_text("data: {n: 4, m: 1}\ntrain: {lr: 1e-05, sizes: [1, 2]}\n")
    assert "modified:           data.n" in _status(repo)
    assert record(repo, ["a"]) == ["a"]
    after = _lock(repo)["a"]["params"]
    assert list(after) == ["params.yaml", "params/a.yaml"] == list(locked)
    train = locked["params/a.yaml"]["train"]
    assert after == {"params.yaml": {"seed": 0}, "params/a.yaml": {"data.n": 4, "train": train}}
    assert "modified" not in _status(repo)
    assert "&id" not in (repo / "dvc.lock").read_text()


def test_a_folder_dep_is_hashed_as_dvc_hashes_it(tmp_path):
    from stages.relock import dir_hash

    repo = tmp_path / "r"
    (repo / "tables" / "sub").mkdir(parents=True)
    (repo / "tables" / "b.csv").write_text("b\n")
    (repo / "tables" / "sub" / "a.csv").write_text("a,1\n")
    spec = {"stages": {"t": {"cmd": "python t.py", "deps": ["t.py", "tables"], "outs": ["out.txt"]}}}
    (repo / "dvc.yaml").write_text(yaml.safe_dump(spec, sort_keys=False))
    (repo / "t.py").write_text("open('out.txt', 'w').write('ok')\n")
    run(["git", "init", "-q"], repo)
    run([str(BIN / "dvc"), "init", "-q"], repo)
    run([str(BIN / "dvc"), "repro"], repo)
    locked = next(d for d in _lock(repo)["t"]["deps"] if d["path"] == "tables")
    assert dir_hash(repo / "tables", "tables") == locked
