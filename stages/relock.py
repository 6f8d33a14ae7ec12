"""Record an output-neutral code change in dvc.lock without rerunning the default profile.

A change that cannot change results (a refactor, a new input check, a clearer error) still makes
every stage whose code it touches stale, and the default profile of nineteen papers takes hours.
The change is recorded in two steps, the first being the proof:

1. ``python -m stages.relock compare OLD NEW [PREFIX ...]``: two smoke workspaces (the old code's and
   the new code's, e.g. from ``tests.smoke.copy_repo`` + ``python -m stages.repro``); every output
   hash of every stage must match (timings, prose and plots are listed apart). Exit 1 otherwise.
2. ``python -m stages.relock record STAGE ... | --all``: rewrite those stages' dvc.lock entries
   from the current dvc.yaml, sources and params files (cmd, code deps hashed here, params values
   from params.yaml and each ``params/<paper>.yaml`` the stage lists, upstream data deps taken from
   the producing stage's locked outputs); each stage's own locked
   outputs are kept, so the committed results stay the ones the default run produced.

Say in the commit message what the comparison showed. ``record`` needs no outputs on disk (a fresh
clone has none); it refuses a dep that is neither a file here nor another stage's output.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

import yaml
from dvc.utils.serialize import dumps_yaml, load_yaml

DEFAULT_PARAMS = "params.yaml"
# outputs that differ between identical runs by design (wall times) or that are prose about them
SOFT = ("/timings/", "report.md", "/plots", "index.", "/manifests/", "manifest.md", "claim.json")


def _out_path(entry: Any) -> str:
    return entry if isinstance(entry, str) else next(iter(entry))


def _get(params: dict, dotted: str, file: str = DEFAULT_PARAMS) -> Any:
    """The value of a dotted params key (``espo.rl`` → params['espo']['rl'])."""
    value: Any = params
    for part in dotted.split("."):
        if not isinstance(value, dict) or part not in value:
            raise SystemExit(f"{file} has no key '{dotted}'")
        value = value[part]
    return value


def params_values(root: Path, name: str, listed: list[Any], files: dict[str, Any]) -> dict[str, Any]:
    """A stage's locked params as DVC writes them: ``params.yaml`` first, then the other files by
    path, each file's keys sorted. ``listed`` is the stage's ``params:`` in dvc.yaml (a key of
    params.yaml, or ``{file: [keys]}``); ``files`` caches each file's parse."""
    wanted: dict[str, list[str] | None] = {}
    for item in listed:
        pairs = [(DEFAULT_PARAMS, [item])] if isinstance(item, str) else \
            list(item.items()) if isinstance(item, dict) else None
        if pairs is None:
            raise SystemExit(f"{name}: params entry {item!r} is neither a key nor {{file: [keys]}}")
        for file, keys in pairs:
            if keys is None or keys == []:
                wanted[file] = None  # the whole file
            elif wanted.get(file, []) is not None:
                wanted[file] = [*(wanted.get(file) or []), *keys]
    out: dict[str, Any] = {}
    for file in sorted(wanted, key=lambda f: (f != DEFAULT_PARAMS, f)):
        if file not in files:
            if not (root / file).is_file():
                raise SystemExit(f"{name}: params file {file} is missing")
            files[file] = load_yaml(root / file)
        keys = wanted[file]
        values = files[file] if keys is None else {k: _get(files[file], k, file) for k in keys}
        values = copy.deepcopy(values)  # shared objects would be written as YAML anchors and aliases
        out[file] = {k: values[k] for k in sorted(values)}
    return out


def file_hash(path: Path, rel: str) -> dict[str, Any]:
    """A file dep as DVC records it (md5 of the bytes)."""
    data = path.read_bytes()
    return {"path": rel, "hash": "md5", "md5": hashlib.md5(data).hexdigest(), "size": len(data)}


def dir_hash(path: Path, rel: str) -> dict[str, Any]:
    """A folder dep as DVC records it: the md5 of its sorted file list (each file's md5 and relative
    path, as JSON) with ``.dir`` appended, the total size and the number of files."""
    files = sorted((p for p in path.rglob("*") if p.is_file()), key=lambda p: p.relative_to(path).as_posix())
    listing = [{"md5": hashlib.md5(p.read_bytes()).hexdigest(), "relpath": p.relative_to(path).as_posix()}
               for p in files]
    digest = hashlib.md5(json.dumps(listing, sort_keys=True).encode("utf-8")).hexdigest()
    return {"path": rel, "hash": "md5", "md5": f"{digest}.dir", "size": sum(p.stat().st_size for p in files),
            "nfiles": len(files)}


def record(root: Path, names: list[str]) -> list[str]:
    """Rewrite the lock entries of ``names`` (all stages if empty); return those that changed."""
    # read as DVC reads them (YAML 1.2: `1e-05` is a float), so what is written back compares equal
    spec = load_yaml(root / "dvc.yaml")["stages"]
    if any("foreach" in s or "matrix" in s for s in spec.values()):
        raise SystemExit("dvc.yaml has foreach/matrix stages; record handles plain stages only")
    lock = load_yaml(root / "dvc.lock")
    files: dict[str, Any] = {}  # each params file, parsed once
    unknown = [n for n in names if n not in spec or n not in lock["stages"]]
    if unknown:
        raise SystemExit(f"not a locked stage of dvc.yaml: {', '.join(unknown)}")
    locked_outs = {o["path"]: o for e in lock["stages"].values() for o in e.get("outs", [])}
    produced = {_out_path(o) for s in spec.values() for kind in ("outs", "metrics", "plots") for o in s.get(kind, [])}
    changed = []
    for name in names or [n for n in spec if n in lock["stages"]]:
        stage, old = spec[name], lock["stages"][name]
        old_deps = {d["path"]: d for d in old.get("deps", [])}
        deps = []
        for dep in stage.get("deps", []):
            if dep in produced:
                if dep not in locked_outs:
                    raise SystemExit(f"{name}: dep {dep} is an output no stage has locked")
                deps.append({"path": dep, **{k: v for k, v in locked_outs[dep].items() if k != "path"}})
            elif (root / dep).is_file():
                deps.append(file_hash(root / dep, dep))
            elif (root / dep).is_dir() and not any(p.startswith(dep.rstrip("/") + "/") for p in produced):
                deps.append(dir_hash(root / dep, dep))
            elif any(dep.startswith(p.rstrip("/") + "/") for p in produced) and dep in old_deps:
                # one file of another stage's output folder, not on disk here: its locked hash stands
                deps.append(old_deps[dep])
            else:
                raise SystemExit(f"{name}: dep {dep} is neither a file here nor another stage's output")
        entry: dict[str, Any] = {"cmd": stage["cmd"], "deps": sorted(deps, key=lambda d: d["path"])}
        if stage.get("params"):
            entry["params"] = params_values(root, name, stage["params"], files)
        entry["outs"] = old.get("outs", [])
        if entry != old:
            changed.append(name)
        lock["stages"][name] = entry
    tmp = root / "dvc.lock.tmp"
    tmp.write_text(dumps_yaml(lock))  # DVC's own writer: entries look as `dvc repro` writes them (smaller diffs)
    tmp.replace(root / "dvc.lock")
    return changed


def compare(old: Path, new: Path, prefixes: tuple[str, ...] = ()) -> tuple[list[str], list[str], int]:
    """(outputs that differ, soft outputs that differ, outputs equal) between two workspaces' locks."""
    a, b = (yaml.safe_load((r / "dvc.lock").read_text())["stages"] for r in (old, new))
    differ, soft, same = [], [], 0
    for name in sorted(set(a) & set(b)):
        if prefixes and not name.startswith(prefixes):
            continue
        oa = {o["path"]: o.get("md5") for o in a[name].get("outs", [])}
        ob = {o["path"]: o.get("md5") for o in b[name].get("outs", [])}
        for path in sorted(set(oa) | set(ob)):
            if oa.get(path) == ob.get(path):
                same += 1
            else:
                (soft if any(s in path for s in SOFT) else differ).append(f"{name}: {path}")
    return differ, soft, same


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m stages.relock", description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    cmp_ = sub.add_parser("compare", help="output hashes of two smoke workspaces, stage by stage")
    cmp_.add_argument("old", type=Path)
    cmp_.add_argument("new", type=Path)
    cmp_.add_argument("prefixes", nargs="*", help="only stages whose names start with these")
    rec = sub.add_parser("record", help="rewrite lock entries from the current code, keeping outputs")
    rec.add_argument("stages", nargs="*")
    rec.add_argument("--all", action="store_true")
    rec.add_argument("--root", type=Path, default=Path("."))
    args = parser.parse_args(argv)
    if args.command == "compare":
        differ, soft, same = compare(args.old, args.new, tuple(args.prefixes))
        for line in differ:
            print("DIFFER", line)
        print(f"{same} outputs equal, {len(differ)} differ, {len(soft)} timings/prose/plots differ"
              f" (not compared)")
        return 1 if differ or not same else 0
    if bool(args.stages) == args.all:
        parser.error("name the stages or pass --all (not both)")
    changed = record(args.root, [] if args.all else args.stages)
    print(f"rewrote {len(changed)} lock entries: {' '.join(changed)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
