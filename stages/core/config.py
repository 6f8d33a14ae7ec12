"""Typed loading of the params: global switches, per-step sections and profiles.

``params.yaml`` holds the global switches (``seed``, ``profile``, ``threads``, ``papers``);
``params/assets.yaml`` the shared asset stages' sections and ``params/<paper>.yaml`` each listed
paper's (its top-level keys are the paper's sections). ``read_params`` merges them into one
mapping (``data["espo"]`` is ``params/espo.yaml``), so a dotted section such as ``espo.train``
names the same values as before the split. One file per paper keeps DVC's params check cheap:
each stage's params deps read one small file, not one 1,700-line file per stage.

A step section holds its default-profile values; ``profiles: {smoke: {...}, paper:
{...}}`` inside it overrides some of them. Every profile of a section is validated
whenever the section is loaded, so a typo in the ``paper`` profile is refused even on
a ``default`` run, before any work starts. Errors name the dotted key.

Every section (``Section`` and its subclasses, nested ones included) refuses ±inf and NaN in
float fields and booleans in number fields, and takes only true integers for int fields
(``true``, ``2.0`` and ``"2"`` are refused; an int is still accepted for a float field).
"""

from __future__ import annotations

import copy
import re
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Literal, TypeVar

import yaml
from pydantic import BaseModel, ConfigDict, Field, GetCoreSchemaHandler, ValidationError
from pydantic_core import PydanticCustomError, core_schema

PROFILES: tuple[str, ...] = ("smoke", "default", "paper")
Profile = Literal["smoke", "default", "paper"]
DEFAULT_PARAMS = Path("params.yaml")
PARAMS_DIR = "params"  # beside params.yaml: one file per section of the merged mapping
SHARED_SECTIONS: tuple[str, ...] = ("assets",)  # sections of no paper (the asset stages')


class ConfigError(ValueError):
    """A params problem; the message names the file or the dotted key."""


def _no_bool(value: Any) -> Any:
    if isinstance(value, bool):
        raise PydanticCustomError("float_type", "Input should be a valid number, not a boolean")
    return value


# schema keys that hold no validation schema of the section's own fields
_OPAQUE_KEYS = frozenset({"metadata", "serialization", "cls", "ref", "default", "expected", "config"})


def _strict_numbers(node: Any) -> Any:
    """A copy of a core schema with strict ints and bool-refusing, finite floats."""
    if isinstance(node, list | tuple):
        return type(node)(_strict_numbers(v) for v in node)
    if not isinstance(node, dict):
        return node
    is_schema = isinstance(node.get("type"), str)  # else a mapping of names (a model's fields)
    out = {k: v if is_schema and k in _OPAQUE_KEYS else _strict_numbers(v) for k, v in node.items()}
    if out.get("type") == "int":
        out["strict"] = True
    elif out.get("type") == "float":
        out["allow_inf_nan"] = False
        out = core_schema.no_info_before_validator_function(_no_bool, out)
    return out


class Section(BaseModel):
    """Base of every params section: unknown keys are refused, values are frozen and finite.

    Float fields refuse ±inf and NaN (``allow_inf_nan=False``); int fields are strict (a boolean,
    a float or a string is refused) and float fields refuse booleans; nested sections too.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, allow_inf_nan=False)

    @classmethod
    def __get_pydantic_core_schema__(cls, source: Any, handler: GetCoreSchemaHandler) -> Any:
        return _strict_numbers(handler(source))


class GlobalParams(Section):
    """The top-level switches shared by every stage."""

    seed: int = Field(ge=0)
    profile: Profile
    threads: int = Field(ge=1, le=512)
    papers: list[str] = Field(min_length=1)


S = TypeVar("S", bound=BaseModel)

# Sections read while a recording is open: how the DAG generator learns a step's params deps.
_recording: list[list[str]] = []


@contextmanager
def record_sections() -> Iterator[list[str]]:
    """Collect the dotted sections that ``load_section`` reads inside the block."""
    seen: list[str] = []
    _recording.append(seen)
    try:
        yield seen
    finally:
        _recording.remove(seen)


# libyaml's loader when PyYAML was built with it (the same values, about 7x faster on params files)
_LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
# each file's last parse, keyed by its path and text: a stage reads its params several times
_parsed: dict[str, tuple[str, Any]] = {}
_MAX_PARSED = 256


def _read_mapping(path: Path) -> dict[str, Any]:
    """One params file as a mapping (parsed once while its text is unchanged; not copied)."""
    if not path.is_file():
        raise ConfigError(f"params file not found: {path}")
    try:
        text = path.read_text()
        key = str(path.resolve())
        hit = _parsed.get(key)
        if hit is None or hit[0] != text:
            if len(_parsed) >= _MAX_PARSED:
                _parsed.clear()
            _parsed[key] = (text, yaml.load(text, Loader=_LOADER))  # a safe loader
        data = _parsed[key][1]
    except (yaml.YAMLError, UnicodeDecodeError) as err:
        raise ConfigError(f"{path}: not valid YAML: {' '.join(str(err).split())}") from None
    if not isinstance(data, dict):
        raise ConfigError(f"{path}: top level must be a mapping")
    return data


def section_file(name: str, params_path: Path | str = DEFAULT_PARAMS) -> Path:
    """The file that holds top-level section ``name`` (a paper or ``assets``): ``params/<name>.yaml``."""
    return Path(params_path).parent / PARAMS_DIR / f"{name}.yaml"


def section_names(data: dict[str, Any], params_path: Path | str = DEFAULT_PARAMS) -> list[str]:
    """The sections kept in files of their own: the shared ones, then ``papers:`` in order."""
    papers = data.get("papers")
    if not isinstance(papers, list) or not all(isinstance(p, str) and p for p in papers):
        _validate(GlobalParams, _global_values(data), "params")  # names the key: params.papers: ...
        raise ConfigError(f"params.papers: must be a list of paper names ({params_path})")
    return [*SHARED_SECTIONS, *papers]


def file_of_error(message: str, params_path: Path | str = DEFAULT_PARAMS) -> Path:
    """The params file a ``ConfigError`` message blames: ``params/<name>.yaml`` for a message that starts
    with a dotted key of section ``name`` (``espo.train.lr: ...``), else ``params_path``."""
    head = re.match(r"([A-Za-z0-9_-]+)\.[A-Za-z0-9_]", message)
    if head and head.group(1) != "params" and section_file(head.group(1), params_path).is_file():
        return section_file(head.group(1), params_path)
    return Path(params_path)


def read_params(params_path: Path | str = DEFAULT_PARAMS) -> dict[str, Any]:
    """The params as one mapping (a fresh copy): ``params.yaml``'s global switches, and each of
    ``assets`` and the listed papers from ``params/<name>.yaml`` beside it (a file read again is
    parsed once). A listed paper without its file, a section left in ``params.yaml`` and a file under
    ``params/`` for no listed paper are refused, naming the files."""
    path = Path(params_path)
    data = dict(_read_mapping(path))
    names = section_names(data, path)
    folder = path.parent / PARAMS_DIR
    inline = [n for n in names if n in data]
    if inline:
        raise ConfigError(f"section '{inline[0]}' is in {path}, but its params belong in "
                          f"{section_file(inline[0], path)} (move it there; keep one copy)")
    stray = sorted(f.name for f in folder.glob("*.yaml") if f.stem not in names) if folder.is_dir() else []
    if stray:
        raise ConfigError(f"{folder / stray[0]}: no paper '{Path(stray[0]).stem}' in papers: of {path} "
                          f"(list it there, or remove the file)")
    for name in names:
        file = section_file(name, path)
        if not file.is_file():
            what = "the shared section" if name in SHARED_SECTIONS else f"paper '{name}' (papers: in {path})"
            raise ConfigError(f"{file} is missing: the params of {what}")
        data[name] = _read_mapping(file)
    return copy.deepcopy(data)


def _lookup(data: dict[str, Any], dotted: str, params_path: Path | str = DEFAULT_PARAMS) -> Any:
    node: Any = data
    head, *rest = dotted.split(".")
    where = f"{section_file(head, params_path)}" if rest and head in data else f"{params_path}"
    for part in dotted.split("."):
        if not isinstance(node, dict) or part not in node:
            raise ConfigError(f"missing section '{dotted}' (no key '{part}' in {where})")
        node = node[part]
    return node


def _merge(base: dict[str, Any], override: dict[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in override.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def _from_override(loc: Sequence[Any], override: dict[str, Any] | None) -> bool:
    """Whether the value at ``loc`` came from the profile override (merged over the base values)."""
    node: Any = override
    if not node or not loc:
        return False
    for part in loc:
        if not isinstance(node, dict):
            return True  # the override replaced this whole value (a list, a scalar)
        if part not in node:
            return False
        node = node[part]
    return True


def _format_errors(err: ValidationError, prefix: str, overridden: dict[str, Any] | None = None,
                   override_prefix: str = "") -> str:
    lines = []
    for e in err.errors():
        loc = [str(p) for p in e["loc"]]
        # blame the profile override only when the bad key came from it, else the base value
        head = override_prefix if _from_override(e["loc"], overridden) else prefix
        msg = "unknown key" if e["type"] == "extra_forbidden" else e["msg"]
        lines.append(f"{'.'.join([head, *loc])}: {msg}")
    return "; ".join(lines)


def _validate(model: type[S], values: Any, prefix: str, overridden: dict[str, Any] | None = None,
              override_prefix: str = "") -> S:
    try:
        return model.model_validate(values)
    except ValidationError as err:
        raise ConfigError(_format_errors(err, prefix, overridden, override_prefix)) from None


def profile_values(raw: Any, profile: str, dotted: str) -> dict[str, Any]:
    """The section's values at ``profile``: base values with that profile's overrides."""
    if not isinstance(raw, dict):
        raise ConfigError(f"{dotted}: must be a mapping, got {type(raw).__name__}")
    base = {k: v for k, v in raw.items() if k != "profiles"}
    profiles = raw.get("profiles") or {}
    if not isinstance(profiles, dict):
        raise ConfigError(f"{dotted}.profiles: must be a mapping")
    unknown = sorted(set(profiles) - set(PROFILES))
    if unknown:
        raise ConfigError(f"{dotted}.profiles.{unknown[0]}: unknown profile (valid: {', '.join(PROFILES)})")
    override = profiles.get(profile) or {}
    if not isinstance(override, dict):
        raise ConfigError(f"{dotted}.profiles.{profile}: must be a mapping")
    return _merge(base, override)


def load_section(model: type[S], dotted: str, params_path: Path | str = DEFAULT_PARAMS,
                 profile: str | None = None) -> S:
    """Validate section ``dotted`` under every profile and return it at ``profile``."""
    for seen in _recording:
        if dotted not in seen:
            seen.append(dotted)
    data = read_params(params_path)
    profile = profile or _validate(GlobalParams, _global_values(data), "params").profile
    raw = _lookup(data, dotted, params_path)
    chosen = None
    for name in PROFILES:
        values = profile_values(raw, name, dotted)
        overrides = (raw.get("profiles") or {}).get(name) or {}
        cfg = _validate(model, values, dotted, overrides, f"{dotted}.profiles.{name}")
        if name == profile:
            chosen = cfg
    assert chosen is not None
    return chosen


def _global_values(data: dict[str, Any]) -> dict[str, Any]:
    return {k: copy.deepcopy(data[k]) for k in GlobalParams.model_fields if k in data}


def load_global(params_path: Path | str = DEFAULT_PARAMS) -> GlobalParams:
    """The global ``seed``, ``profile``, ``threads`` and ``papers`` switches (``params.yaml`` alone)."""
    return _validate(GlobalParams, _global_values(_read_mapping(Path(params_path))), "params")
