"""Verdict rules are fixed before results, and git shows it (DESIGN.md, "Verdicts are decided before results").

For every paper, the last commit that changed its ``verdict:`` block (in params.yaml before the
params were split, in params/<paper>.yaml since; a commit that moved it unchanged is no change) must
change no file under ``reports/<paper>/`` and must come before the commit of the paper's
current default-profile results. A rule changed after earlier results were committed must
be explained in the report's "Rule history" section.
"""

from __future__ import annotations

import functools
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from stages.core.config import PARAMS_DIR, load_global, read_params

ROOT = Path(__file__).resolve().parents[2]


def _git(*args: str, root: Path = ROOT) -> str:
    proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def _load_yaml(text: str) -> Any:
    """``yaml.safe_load`` through libyaml where PyYAML has it (the history holds a hundred params files)."""
    return yaml.load(text, Loader=getattr(yaml, "CSafeLoader", yaml.SafeLoader))


@functools.cache
def _top_params_at(commit: str, root: Path = ROOT) -> dict[str, Any] | None:
    """params.yaml at ``commit`` (None where it does not exist)."""
    try:
        return _load_yaml(_git("show", f"{commit}:params.yaml", root=root)) or {}
    except RuntimeError:
        return None


@functools.cache
def _section_at(commit: str, paper: str, root: Path = ROOT) -> Any:
    """``paper``'s params section at ``commit``: under its name in params.yaml (before the params were
    split), else ``params/<paper>.yaml``; None where neither holds it."""
    top = _top_params_at(commit, root)
    if top is None:
        return None
    if paper in top:
        return top[paper]
    try:
        return _load_yaml(_git("show", f"{commit}:{PARAMS_DIR}/{paper}.yaml", root=root)) or {}
    except RuntimeError:
        return None


def _verdict_at(commit: str | None, paper: str, root: Path = ROOT) -> Any:
    if commit is None:
        return None
    section = _section_at(commit, paper, root)
    return section.get("verdict") if isinstance(section, dict) else None


def _parents(commit: str, root: Path = ROOT) -> list[str | None]:
    return _git("rev-list", "--parents", "-n", "1", commit, root=root).split()[1:] or [None]


def last_rule_change(paper: str, root: Path = ROOT) -> str | None:
    """The newest commit whose params changed ``<paper>.verdict``. A merge changed it only when its rule
    differs from every parent's (else the rule came in with a parent's own history); a commit that moved
    the block to another file with the same value changed nothing."""
    # only these two files can hold the paper's rule, so only commits touching them are read
    for commit in _git("log", "--format=%H", "--", "params.yaml", f"{PARAMS_DIR}/{paper}.yaml", root=root).split():
        rule = _verdict_at(commit, paper, root)
        if all(rule != _verdict_at(parent, paper, root) for parent in _parents(commit, root)):
            return commit
    return None


def default_result_commits(paper: str, root: Path = ROOT) -> list[str]:
    """Commits (newest first) whose reports/<paper>/claim.json holds default-profile results."""
    found = []
    for commit in _git("log", "--format=%H", "--", f"reports/{paper}/claim.json", root=root).split():
        try:
            claim = json.loads(_git("show", f"{commit}:reports/{paper}/claim.json", root=root))
        except (RuntimeError, json.JSONDecodeError):
            continue
        if claim.get("profile") == "default":
            found.append(commit)
    return found


def _is_ancestor(a: str, b: str, root: Path = ROOT) -> bool:
    return subprocess.run(["git", "merge-base", "--is-ancestor", a, b], cwd=root).returncode == 0


@pytest.fixture(scope="module")
def history() -> None:
    if _git("rev-parse", "--is-shallow-repository").strip() == "true":
        pytest.fail("pre-registration needs the full git history: clone without --depth (CI: fetch-depth: 0)")


def check_registration(paper: str, root: Path = ROOT) -> None:
    """The paper's rule was last changed by a commit touching no reports/<paper>/, before its current default
    results; a rule changed after earlier results is explained in the report's 'Rule history'."""
    rule_commit = last_rule_change(paper, root)
    assert rule_commit is not None, f"{paper}: no commit adds its verdict block"
    touched = _git("show", "--name-only", "--format=", rule_commit, root=root).split()
    in_reports = [f for f in touched if f.startswith(f"reports/{paper}/")]
    assert not in_reports, (f"{paper}: the rule's last change ({rule_commit[:8]}) also commits results "
                            f"{in_reports}: commit the verdict block alone, before the run")
    results = default_result_commits(paper, root)
    if not results:
        return  # no default results yet
    latest = results[0]
    assert latest != rule_commit and _is_ancestor(rule_commit, latest, root), (
        f"{paper}: the current default results ({latest[:8]}) do not come after the rule's last change "
        f"({rule_commit[:8]}); rerun the default profile after registering the rule")
    earlier = [c for c in results if _is_ancestor(c, rule_commit, root)]
    if earlier:
        report = (root / "reports" / paper / "report.md").read_text()
        assert "Rule history" in report, (
            f"{paper}: its rule changed after results were committed ({earlier[0][:8]}); the report must say "
            "so in a 'Rule history' section with the old rule's outcome")


@pytest.mark.parametrize("paper", load_global(ROOT / "params.yaml").papers)
def test_verdict_rule_was_committed_on_its_own_before_the_results(paper, history):
    head_rule = _verdict_at("HEAD", paper)
    current = read_params(ROOT / "params.yaml").get(paper, {}).get("verdict")
    if current != head_rule:
        pytest.fail(f"{paper}: the verdict block in params/{paper}.yaml differs from HEAD; commit it on its own "
                    "(touching no reports/) before the default run")
    check_registration(paper)


def _commit(repo: Path, message: str, files: dict[str, Any], remove: tuple[str, ...] = ()) -> str:
    """Write ``files`` (YAML for .yaml, JSON for .json, text otherwise), commit everything, return the hash."""
    for rel in remove:
        (repo / rel).unlink()
    for rel, value in files.items():
        path = repo / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        text = (yaml.safe_dump(value, sort_keys=False) if rel.endswith(".yaml")
                else json.dumps(value) if rel.endswith(".json") else str(value))
        path.write_text(text)
    _git("add", "-A", root=repo)
    _git("-c", "user.email=t@t", "-c", "user.name=t", "commit", "-qm", message, root=repo)
    return _git("rev-parse", "HEAD", root=repo).strip()


def _repo(tmp_path: Path) -> Path:
    repo = tmp_path / "repo"
    repo.mkdir()
    _git("init", "-q", root=repo)
    return repo


RULE = {"checks": [{"name": "c", "metric": "m", "op": ">=", "threshold": 0.1}], "min_seeds": 3}
GLOBAL = {"seed": 0, "profile": "default", "threads": 1, "papers": ["p"]}
RESULT = {"reports/p/claim.json": {"profile": "default", "verdict": "reproduced"}}


def test_a_rule_committed_with_its_results_fails(tmp_path):
    """The check can fail: the rule and the default results in one commit are refused."""
    repo = _repo(tmp_path)
    _commit(repo, "rule and results", {"params.yaml": GLOBAL, "params/p.yaml": {"verdict": RULE}, **RESULT})
    with pytest.raises(AssertionError, match="also commits results"):
        check_registration("p", repo)


def test_a_rule_changed_after_its_results_needs_a_rerun_and_a_rule_history(tmp_path):
    """Rule, then results: passes. A new rule with no rerun fails; after the rerun the report must carry a
    'Rule history', and passes once it does."""
    repo = _repo(tmp_path)
    _commit(repo, "rule", {"params.yaml": GLOBAL, "params/p.yaml": {"verdict": RULE}})
    _commit(repo, "results", {**RESULT, "reports/p/report.md": "# p"})
    check_registration("p", repo)
    _commit(repo, "new rule", {"params/p.yaml": {"verdict": {**RULE, "min_seeds": 5}}})
    with pytest.raises(AssertionError, match="do not come after"):
        check_registration("p", repo)
    _commit(repo, "rerun", {"reports/p/claim.json": {"profile": "default", "verdict": "partly"}})
    with pytest.raises(AssertionError, match="Rule history"):
        check_registration("p", repo)
    _commit(repo, "report", {"reports/p/report.md": "# p\n## Rule history\n- rule 1: reproduced"})
    check_registration("p", repo)


def test_moving_a_verdict_block_to_its_papers_file_is_not_a_rule_change(tmp_path):
    """The split of params.yaml into params/<paper>.yaml moved every verdict block unchanged: the rule's last
    change stays the commit before it; an edit in the paper's file after the split is one."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git = ["-c", "user.email=t@t", "-c", "user.name=t"]
    rule = {"checks": [{"name": "c", "metric": "m", "op": ">=", "threshold": 0.1}], "min_seeds": 3}

    def commit(message: str, files: dict[str, Any], remove: tuple[str, ...] = ()) -> str:
        for rel in remove:
            (repo / rel).unlink()
        for rel, value in files.items():
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_text(yaml.safe_dump(value, sort_keys=False))
        _git("add", "-A", root=repo)
        _git(*git, "commit", "-qm", message, root=repo)
        return _git("rev-parse", "HEAD", root=repo).strip()

    _git("init", "-q", root=repo)
    glob = {"seed": 0, "profile": "default", "threads": 1, "papers": ["p", "q"]}
    registered = commit("rules", {"params.yaml": {**glob, "p": {"verdict": rule}, "q": {"verdict": rule}}})
    commit("split", {"params.yaml": glob, "params/p.yaml": {"verdict": rule}, "params/q.yaml": {"verdict": rule}})
    changed = commit("q: new rule", {"params/q.yaml": {"verdict": {**rule, "min_seeds": 5}}})
    assert last_rule_change("p", repo) == registered
    assert last_rule_change("q", repo) == changed
    assert _verdict_at(changed, "q", repo)["min_seeds"] == 5
