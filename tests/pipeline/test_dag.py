"""The DAG is generated, up to date, and consistent with params.yaml, the folders and the code's imports."""

from __future__ import annotations

import itertools
import re
import shlex
from pathlib import Path

import yaml

from stages.core.config import load_global
from stages.dag import generate, import_closure, imports_of, packages, steps

ROOT = Path(__file__).resolve().parents[2]
NOT_PAPERS = {"core", "assets", "__pycache__"}


def _dvc() -> dict:
    return yaml.safe_load((ROOT / "dvc.yaml").read_text())


def _stages() -> dict:
    return _dvc()["stages"]


def _paper_folders() -> set[str]:
    return {p.name for p in (ROOT / "stages").iterdir() if p.is_dir() and p.name not in NOT_PAPERS}


def _paths(entries: list) -> list[str]:
    return [next(iter(e)) if isinstance(e, dict) else e for e in entries]


def test_papers_list_matches_folders_and_stages():
    papers = set(load_global(ROOT / "params.yaml").papers)
    assert papers == _paper_folders()
    prefixes = {name.rsplit("-", 1)[0] for name in _stages() if "-" in name and not name.startswith("assets-")}
    assert prefixes == papers
    for paper in papers:
        assert f"{paper}-report" in _stages(), f"{paper} has no report stage"
        assert (ROOT / "tests" / paper).is_dir(), f"{paper} has no tests folder"


def test_claims_stage_depends_on_every_claim_and_nothing_else():
    papers = load_global(ROOT / "params.yaml").papers
    claim_deps = {d for d in _stages()["claims"]["deps"] if d.startswith("reports/")}
    assert claim_deps == {f"reports/{p}/claim.json" for p in papers}
    for p in papers:
        outs = _paths(_stages()[f"{p}-report"]["outs"])
        assert f"reports/{p}/claim.json" in outs


def test_every_stage_lists_the_code_it_imports_as_deps():
    for name, stage in _stages().items():
        match = re.match(r"python -m (stages[\w.]*)", stage["cmd"])
        assert match, f"{name}: cmd must be `python -m stages....`"
        deps = {ROOT / d for d in stage["deps"]}
        for f in import_closure(match.group(1)):
            covered = f in deps or any(d in f.parents for d in deps)
            assert covered, f"stage {name} imports {f.relative_to(ROOT)} but does not list it in deps"
        for d in stage["deps"]:
            if d.startswith("stages/"):
                assert (ROOT / d).exists(), f"{name}: dep {d} does not exist"


def test_every_path_on_the_command_line_is_a_dep_or_an_out():
    for name, stage in _stages().items():
        declared = set(stage.get("deps", [])) | set(_paths(stage.get("outs", [])))
        declared |= set(_paths(stage.get("metrics", [])))
        args = shlex.split(stage["cmd"])
        values = [a for prev, a in itertools.pairwise(args) if prev.startswith("--")]
        for value in values:
            assert value in declared or any(d.startswith(value.rstrip("/") + "/") for d in declared), (
                f"{name}: {value} is passed on the command line but is neither a dep nor an out")
        for o in _paths(stage.get("outs", [])) + _paths(stage.get("metrics", [])):
            assert o in values, f"{name}: out {o} is not passed on the command line"


def test_reports_are_uncached_and_data_is_cached():
    for name, stage in _stages().items():
        for entry in stage.get("outs", []) + stage.get("metrics", []):
            path = next(iter(entry)) if isinstance(entry, dict) else entry
            cache = entry[path].get("cache", True) if isinstance(entry, dict) else True
            if path.startswith("reports/"):
                assert cache is False, f"{name}: {path} must be cache: false (committed to git)"
            else:
                assert cache is True, f"{name}: {path} must be cached by DVC"


def test_metrics_and_plots_are_declared():
    dvc = _dvc()
    plots = {next(iter(p)) if isinstance(p, dict) else p for p in dvc.get("plots", [])}
    for paper in load_global(ROOT / "params.yaml").papers:
        assert f"reports/{paper}/metrics.json" in _paths(dvc["stages"][f"{paper}-report"]["metrics"])
        assert f"reports/{paper}/plots" in plots, f"{paper}: its plots folder is not declared"


def test_dvc_yaml_is_generated_from_the_code_and_up_to_date():
    assert (ROOT / "dvc.yaml").read_text() == generate(ROOT / "params.yaml"), (
        "dvc.yaml is out of date with stages/*/pipeline.py, the steps' Paths or their imports: run `make dag`")


def test_steps_are_leaves_no_module_imports_a_step():
    step_modules = {e.run.__module__ for pkg in packages(ROOT / "params.yaml") for e in steps(pkg)}
    step_modules.add("stages.claims")
    for f in sorted((ROOT / "stages").rglob("*.py")):
        imported = imports_of(f) & step_modules
        assert not imported, (f"{f.relative_to(ROOT)} imports step module(s) {sorted(imported)}: move the readers "
                              "and writers it needs into the paper's io.py (assets: stages/assets/loaders.py)")


def test_no_paper_imports_another_papers_code():
    """Shared code lives in stages/core or stages/assets; a paper reads another paper's outputs, never its code,
    so editing one paper never reruns another."""
    papers = _paper_folders()
    for paper in sorted(papers):
        for f in sorted((ROOT / "stages" / paper).rglob("*.py")):
            foreign = {m for m in imports_of(f) if m.split(".")[1:2] and m.split(".")[1] in papers - {paper}}
            assert not foreign, (f"{f.relative_to(ROOT)} imports {sorted(foreign)}: move what both papers use "
                                 "into stages/core (or stages/assets/loaders.py)")


def test_params_deps_are_the_sections_each_loader_reads():
    stages = _stages()
    assert stages["matrix_denoising-report"]["params"] == [
        "seed", "profile", "threads", {"params/matrix_denoising.yaml": ["report", "verdict"]}]
    assert stages["matrix_denoising-train"]["params"] == [
        "seed", "profile", "threads", {"params/matrix_denoising.yaml": ["train"]}]
    assert stages["assets-wikipedia"]["params"] == ["seed", "profile", "threads", {"params/assets.yaml": ["wikipedia"]}]
    assert stages["claims"]["params"] == ["papers"]


def test_every_stage_reads_its_sections_from_its_papers_file_only():
    """One small file per stage for DVC to read: a paper's stages list params/<paper>.yaml and no other file."""
    for name, stage in _stages().items():
        files = [next(iter(p)) for p in stage.get("params", []) if isinstance(p, dict)]
        plain = [p for p in stage.get("params", []) if isinstance(p, str)]
        assert set(plain) <= {"seed", "profile", "threads", "papers"}, name
        if name != "claims":  # (assets-manifest reads no section)
            assert files in ([], [f"params/{name.split('-')[0]}.yaml"]), f"{name}: {files}"
    assert sum(1 for s in _stages().values() for p in s.get("params", []) if isinstance(p, dict)) >= 90


def test_params_deps_group_dotted_sections_by_their_file():
    import pytest

    from stages.dag import DagError, params_deps

    assert params_deps(["espo.train", "espo.verdict", "assets.wikipedia", "espo.train"]) == [
        "seed", "profile", "threads", ("params/espo.yaml", ["train", "verdict"]), ("params/assets.yaml", ["wikipedia"])]
    with pytest.raises(DagError, match="whole params file"):
        params_deps(["espo"])


def test_a_paths_field_with_no_path_in_the_table_is_refused_naming_it():
    import dataclasses

    import pytest

    from stages.core.stage import Step, inp
    from stages.dag import DagError, field_paths
    from stages.matrix_denoising import config, train

    @dataclasses.dataclass(frozen=True)
    class Paths:
        instances: Path = inp()
        nowhere: Path = inp()

    with pytest.raises(DagError, match="matrix_denoising-train: field 'nowhere'"):
        field_paths(Step("matrix_denoising", "train", train.run, config.load_train, Paths))


def test_an_input_inside_another_stages_output_folder_is_accepted_and_nothing_else_is():
    import pytest

    from stages.dag import DagError, StageSpec, _check_inputs, _expand_folder_inputs

    def specs(dep: str) -> list[StageSpec]:
        sft = StageSpec("p-sft", "m", [], [], [], [("models/p/sft", True)], [])
        report = StageSpec("p-report", "m", [], [dep], [], [("reports/p/report.md", False)], [])
        return [sft, report]

    ok = specs("models/p/sft/manifest.json")
    _expand_folder_inputs(ok)
    _check_inputs(ok)
    assert ok[1].deps == ["models/p/sft/manifest.json"]  # the one file, not the whole folder
    for bad in ("models/p/sft2/manifest.json", "models/p/other.json"):
        with pytest.raises(DagError, match=f"p-report: input {bad} is produced by no stage"):
            _check_inputs(specs(bad))


def test_a_report_that_reads_a_models_manifest_depends_on_the_manifest_not_the_weights():
    deps = _stages()["dupo-report"]["deps"]
    assert "models/dupo/sft/manifest.json" in deps and "models/dupo/sft" not in deps
