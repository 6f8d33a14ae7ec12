"""DVC's command line, with a C reader for the two YAML files the project generates.

``python -m stages.dvc_cli <dvc arguments>`` is ``dvc <dvc arguments>``, except that ``dvc.yaml``
and ``dvc.lock`` are parsed by libyaml (PyYAML's ``CSafeLoader``) instead of ruamel's pure-Python
parser. ``stages.repro`` and the Prefect flows run every stage through it.

Why: DVC rewrites ``dvc.lock`` after every stage by parsing the whole file in ruamel's round-trip
mode (to keep comments; the lock has none) and dumping it again. At 101 stages the lock is
about 16,500 lines, and that parse alone took 1.9 CPU-s of the 3.0 CPU-s parse-and-dump, on every
stage, on top of DVC's safe parse of the lock and of dvc.yaml: about half of the fixed cost of a
smoke-profile stage. The C reader parses the lock in about 0.2 CPU-s.

What stays DVC's: the dump (ruamel's emitter, so the bytes of ``dvc.lock`` are those plain
``dvc repro`` writes), every other file DVC reads (the params files go through DVC's own parser),
and every command's behaviour. The reader resolves plain scalars by YAML 1.2's core schema, with the
patterns ruamel itself uses (``1e-05`` is a float, ``yes`` a string), so it returns the same data
as DVC's parser; ``tests/pipeline/test_dvc_cli.py`` checks that on the committed ``dvc.yaml`` and
``dvc.lock``, and that a lock read this way is dumped back to the same bytes.
"""

from __future__ import annotations

import sys
from pathlib import PurePath
from typing import Any

import yaml

GENERATED = ("dvc.yaml", "dvc.lock")  # the files the fast reader takes; every other file is DVC's
YAML_1_2_TAGS = ("bool", "float", "int", "null", "merge", "timestamp")


class Yaml12Loader(yaml.CSafeLoader):
    """libyaml's parser with YAML 1.2 core-schema resolution (ruamel's patterns for version 1.2)."""


def _install_resolvers() -> None:
    from ruamel.yaml.resolver import implicit_resolvers

    Yaml12Loader.yaml_implicit_resolvers = {}
    for versions, tag, regexp, first in implicit_resolvers:
        if (1, 2) in versions and tag.rsplit(":", 1)[-1] in YAML_1_2_TAGS:
            Yaml12Loader.add_implicit_resolver(tag, regexp, first)


_install_resolvers()


def load_generated(text: str) -> Any:
    """Parse a generated YAML file (dvc.yaml or dvc.lock) into plain dicts and lists."""
    return yaml.load(text, Loader=Yaml12Loader) or {}


def _is_generated(path: Any) -> bool:
    return PurePath(str(path)).name in GENERATED


def install() -> None:
    """Route DVC's reads of dvc.yaml and dvc.lock (safe and round-trip) through ``load_generated``."""
    from dvc.utils import strictyaml
    from dvc.utils.serialize import _yaml

    original = _yaml.parse_yaml
    if getattr(original, "fast_reader", False):
        return

    def parse_yaml(text: str, path: Any, typ: str = "safe") -> Any:
        if _is_generated(path):
            try:
                return load_generated(text)
            except yaml.YAMLError:
                pass  # a broken file: DVC's own parser raises DVC's error, with the line
        return original(text, path, typ=typ)

    def parse_yaml_for_update(text: str, path: Any) -> Any:
        return parse_yaml(text, path, typ="rt")

    parse_yaml.fast_reader = True  # type: ignore[attr-defined]
    _yaml.parse_yaml = parse_yaml
    _yaml.parse_yaml_for_update = parse_yaml_for_update
    strictyaml.parse_yaml = parse_yaml
    strictyaml.parse_yaml_for_update = parse_yaml_for_update


def main(argv: list[str] | None = None) -> int:
    install()
    from dvc.cli import main as dvc_main

    return dvc_main(sys.argv[1:] if argv is None else argv)


if __name__ == "__main__":
    sys.exit(main())
