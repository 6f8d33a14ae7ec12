"""Running SANY and TLC on generated modules, each in its own sandboxed JVM, and reading what they print.

Every run gets a fresh temporary folder (the modules, the TLC config, TLC's ``-metadir``), a CPU-time
limit that decides (independent of the machine's load), a wall-clock limit far above it and a resident-memory
limit (``stages.core.sandbox``; the JVM heap is capped with ``-Xmx``), one worker and a fixed simulation seed, so
the same candidate gives the same result on an idle or a loaded machine.
"""

from __future__ import annotations

import re
import tempfile
from dataclasses import dataclass
from pathlib import Path

from stages.core.sandbox import Completed, Limits, run_limited

MODULE_HEADER = re.compile(r"-{4,}\s*MODULE\s+(\w+)\s*-{4,}")
# a top-level definition starts at column 0: ``Name ==`` or ``Name(a, b) ==``
DEFINITION = re.compile(r"^([A-Za-z_][A-Za-z0-9_]*)\s*(\([^)]*\))?\s*==", re.MULTILINE)
STATE_LABEL = re.compile(r"^State \d+: <(\w+)[ >]", re.MULTILINE)
COVERAGE = re.compile(r"^<(\w+) line \d+, col \d+ to line \d+, col \d+ of module \w+>: (\d+):(\d+)", re.MULTILINE)
VIOLATED = re.compile(r"Invariant (\w+) is violated|Evaluating invariant (\w+) failed")


@dataclass(frozen=True)
class Tools:
    """How to start the TLA+ tools: the jar, the Java command, heap and limits per run."""

    jar: Path
    java: str
    heap_mb: int
    cpu_s: int
    wall_s: float

    def limits(self) -> Limits:
        """CPU seconds per run (the limit that decides: a run's CPU time does not grow with the machine's load,
        so whether a run ends in its limit does not depend on what else runs), a wall clock far above it that
        only stops a run that hangs without computing, and the whole JVM's resident set under heap + 256 MiB."""
        return Limits(wall_s=self.wall_s, cpu_s=self.cpu_s, memory_mb=self.heap_mb + 256, output_mb=32)

    def command(self, main: str, tmp: str) -> list[str]:
        """The JVM command line for ``main`` (``tla2sany.SANY`` or ``tlc2.TLC``) with ``tmp`` as its temporary
        folder: the tools extract their standard modules (``Naturals.tla``, ``TLC.tla``, ...) into
        ``java.io.tmpdir``, and two JVMs sharing ``/tmp`` read each other's half-written copies (an intermittent
        "Could not parse module TLC" that scored a correct spec as failing)."""
        return [self.java, f"-Xmx{self.heap_mb}m", f"-Djava.io.tmpdir={tmp}", "-XX:+UseSerialGC",
                "-XX:TieredStopAtLevel=1", "-Dfile.encoding=UTF-8", "-cp", str(self.jar.resolve()), main]


def rename_module(text: str, module: str) -> str:
    """The module text with its header naming ``module`` (a file's name must match its module)."""
    if MODULE_HEADER.search(text) is None:
        return f"---- MODULE {module} ----\n{text}\n===="
    return MODULE_HEADER.sub(f"---- MODULE {module} ----", text, count=1)


def run_tool(cmd: list[str], limits: Limits, cwd: str, banner: str) -> Completed:
    """One tool run; run again once if the JVM ended with an error before the tool printed its ``banner`` (the
    JVM failed to start on a loaded machine: no verdict on the spec)."""
    done = run_limited(cmd, limits, cwd=cwd)
    if done.outcome == "error" and banner not in done.stdout:
        done = run_limited(cmd, limits, cwd=cwd)
    return done


def _write(folder: Path, modules: dict[str, str], cfg: str | None, root: str) -> None:
    for name, text in modules.items():
        (folder / f"{name}.tla").write_text(text)
    if cfg is not None:
        (folder / f"{root}.cfg").write_text(cfg)


def sany(tools: Tools, modules: dict[str, str], root: str) -> Completed:
    """SANY on ``root`` (with the other modules beside it)."""
    with tempfile.TemporaryDirectory(prefix="sany-") as tmp:
        _write(Path(tmp), modules, None, root)
        return run_tool([*tools.command("tla2sany.SANY", tmp), f"{root}.tla"], tools.limits(), tmp, "SANY")


def sany_ok(done: Completed) -> bool:
    """Whether SANY parsed and resolved every module (it exits 0 even on some semantic errors)."""
    text = done.stdout + done.stderr
    return done.ok and not re.search(r"\*\*\* Errors|Fatal errors|Unknown operator|Could not parse|error",
                                     text, re.IGNORECASE)


def tlc(tools: Tools, modules: dict[str, str], root: str, cfg: str, args: list[str],
        dump: bool = False) -> tuple[Completed, str]:
    """TLC on ``root`` with ``cfg``; returns the run and, with ``dump``, the text of its state dump."""
    with tempfile.TemporaryDirectory(prefix="tlc-") as tmp:
        folder = Path(tmp)
        _write(folder, modules, cfg, root)
        extra = ["-dump", str(folder / "states")] if dump else []
        done = run_tool([*tools.command("tlc2.TLC", tmp), "-workers", "1", "-nowarning", "-deadlock",
                         "-metadir", str(folder / "meta"), *extra, *args, "-config", f"{root}.cfg", root],
                        tools.limits(), tmp, "TLC2 Version")
        dumped = folder / "states.dump"
        text = dumped.read_text(errors="replace") if dump and dumped.is_file() else ""
    return done, text


def tlc_error(done: Completed) -> bool:
    """Whether TLC stopped on an error in the spec (parse, semantic or evaluation), not a limit."""
    text = done.stdout
    return "Error:" in text or "***Parse Error***" in text or "Semantic errors" in text or done.outcome == "error"


def dump_states(text: str) -> list[str]:
    """The states of a TLC dump, each as its sorted variable lines joined (a canonical form)."""
    blocks = re.split(r"^State \d+:\s*$", text, flags=re.MULTILINE)
    states = []
    for block in blocks:
        lines = sorted(line.strip() for line in block.strip().splitlines() if line.strip())
        if lines:
            states.append("\n".join(lines))
    return states


def definitions(text: str) -> dict[str, str]:
    """Top-level definitions of a module: name -> its full text (from its head to the next head or the end)."""
    body = text.split("====")[0] if text.count("====") else text
    heads = list(DEFINITION.finditer(body))
    out: dict[str, str] = {}
    for i, m in enumerate(heads):
        end = heads[i + 1].start() if i + 1 < len(heads) else len(body)
        out.setdefault(m.group(1), body[m.start():end].rstrip())
    return out


def header(text: str) -> str:
    """The module's lines before its first definition (MODULE, EXTENDS, CONSTANTS, VARIABLES)."""
    body = text.split("====")[0]
    first = DEFINITION.search(body)
    return body[: first.start() if first else len(body)].rstrip()
