"""stages/dvc_cli.py: DVC with a C reader for dvc.yaml and dvc.lock reads the same data and writes the
same dvc.lock bytes as DVC itself."""

from __future__ import annotations

import datetime
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from dvc.utils.serialize import _yaml

from stages.dvc_cli import install, load_generated
from tests.flows.conftest import BIN, run

ROOT = Path(__file__).resolve().parents[2]


def _typed(value: Any) -> Any:
    """The value with every scalar's type beside it, so 1 vs 1.0 vs '1' vs True all differ."""
    if isinstance(value, dict):
        return [(_typed(k), _typed(v)) for k, v in value.items()]
    if isinstance(value, list):
        return [_typed(v) for v in value]
    return (type(value).__name__, value)


@pytest.mark.parametrize("name", ["dvc.yaml", "dvc.lock"])
def test_the_committed_files_read_the_same_as_dvcs_parser(name):
    text = (ROOT / name).read_text()
    assert _typed(load_generated(text)) == _typed(_yaml.parse_yaml(text, name))


def test_a_lock_read_by_the_c_reader_is_dumped_to_the_same_bytes():
    text = (ROOT / "dvc.lock").read_text()
    assert _yaml.dumps_yaml(load_generated(text)) == text


def test_plain_scalars_resolve_as_yaml_1_2_like_dvcs_parser():
    text = ("a: 1e-05\nb: yes\nc: on\nd: ~\ne: '2.0'\nf: 2.0\ng: 0x1f\nh: .inf\ni: True\nj: 12\n"
            "k: 2026-01-02\nl: -3.5e+2\nm: 1_000\n")
    ours = load_generated(text)
    assert _typed(ours) == _typed(_yaml.parse_yaml(text, "x.yaml"))
    # by hand: YAML 1.2 (not PyYAML's 1.1): an exponent without a dot is a float, yes/on are strings
    assert ours["a"] == 1e-05 and isinstance(ours["a"], float)
    assert ours["b"] == "yes" and ours["c"] == "on" and ours["d"] is None and ours["e"] == "2.0"
    assert ours["g"] == 31 and ours["i"] is True and ours["k"] == datetime.date(2026, 1, 2)


def test_only_generated_files_take_the_c_reader_and_a_broken_lock_gets_dvcs_error(monkeypatch):
    import stages.dvc_cli as cli

    install()
    install()  # idempotent: the reader is not wrapped twice
    assert getattr(_yaml.parse_yaml, "fast_reader", False)
    calls: list[str] = []
    monkeypatch.setattr(cli, "load_generated", lambda text: calls.append(text) or load_generated(text))
    assert _yaml.parse_yaml("x: 1\n", "params.yaml") == {"x": 1}
    assert calls == []  # a params file is DVC's to read
    assert _yaml.parse_yaml("x: 1\n", "sub/dvc.lock") == {"x": 1}
    assert _yaml.parse_yaml_for_update("y: 2\n", "dvc.yaml") == {"y": 2}
    assert calls == ["x: 1\n", "y: 2\n"]
    with pytest.raises(_yaml.YAMLFileCorruptedError):
        _yaml.parse_yaml("stages: [unclosed\n", "dvc.lock")


def test_a_stage_run_through_it_writes_the_lock_dvc_writes(tmp_path):
    """The same repository reproduced by ``dvc repro`` and by ``python -m stages.dvc_cli repro``."""
    stages = {"stages": {
        "a": {"cmd": "python -c \"open('a.txt','w').write('a')\"", "params": ["a.rate"], "outs": ["a.txt"]},
        "b": {"cmd": "python -c \"open('b.txt','w').write(open('a.txt').read() * 2)\"",
              "deps": ["a.txt"], "params": ["b"], "outs": [{"b.txt": {"cache": False}}]},
    }}
    params = {"a": {"rate": 1e-05, "flag": "yes"}, "b": {"n": 3, "names": ["x", "y"]}}
    locks = []
    for i, command in enumerate(([str(BIN / "dvc")], [sys.executable, "-m", "stages.dvc_cli"])):
        repo = tmp_path / f"r{i}"
        repo.mkdir()
        (repo / "dvc.yaml").write_text(yaml.safe_dump(stages, sort_keys=False))
        (repo / "params.yaml").write_text(yaml.safe_dump(params, sort_keys=False))
        run(["git", "init", "-q"], repo)
        run([str(BIN / "dvc"), "init", "-q"], repo)
        env_root = {"PYTHONPATH": str(ROOT)}
        for stage in ("a", "b"):
            run([*command, "repro", "--single-item", stage], repo, extra_env=env_root)
        run([*command, "repro", "--single-item", "-f", "b"], repo, extra_env=env_root)  # a rewrite of an existing lock
        locks.append((repo / "dvc.lock").read_bytes())
        assert "up to date" in run([str(BIN / "dvc"), "status"], repo).stdout
    assert locks[0] == locks[1]
