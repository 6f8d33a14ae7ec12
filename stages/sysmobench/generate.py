"""Step ``generate``: specs written by the weak generator (SmolLM2-135M-Instruct) and, when configured, an HTTP
endpoint, one per system for each of the first ``n_samples`` seeds, from the system's description, code and
interface, with another system's code and reference spec as a worked example (never the target's own)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd
from tqdm import tqdm

from stages.assets.loaders import load_causal_lm
from stages.core.gx import validate_table
from stages.core.io import write_parquet
from stages.core.seeding import derive_seed
from stages.core.stage import StageContext, Step, inp, out
from stages.core.threads import cap_threads
from stages.sysmobench.config import PAPER, GenerateInputs, load_generate
from stages.sysmobench.expectations import generated_suite
from stages.sysmobench.generators import (
    EXAMPLE_OF,
    Generator,
    HttpEndpoint,
    LocalLM,
    extract_module,
    module_start,
    spec_prompt,
)
from stages.sysmobench.specs import systems


@dataclass(frozen=True)
class Paths:
    lm: Path = inp("SmolLM2-135M-Instruct asset (the weak generator)")
    generated: Path = out("one spec per generator, seed and system, with its prompt and raw reply (Parquet)")


def run(cfg: GenerateInputs, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Ask every generator for a spec of every system, once per seed."""
    g = cfg.generate
    cap_threads(g.max_threads)
    model, tokenizer = load_causal_lm(paths.lm)
    writers: list[Generator] = [LocalLM(model, tokenizer, g.max_new_tokens, g.temperature)]
    if g.endpoint is not None:
        writers.append(HttpEndpoint(g.endpoint, g.max_new_tokens, g.endpoint_timeout_s))
    sizes = systems(cfg.traces.n_procs, cfg.traces.capacity, cfg.traces.n_values)
    jobs = [(w, s, name) for w in writers for s in cfg.traces.seed_indices[:g.n_samples] for name in cfg.traces.systems]
    rows = []
    for writer, s, name in tqdm(jobs, desc="specs", unit="spec"):
        prompt = spec_prompt(sizes[name], sizes[EXAMPLE_OF[name]])
        reply = writer.write_spec(prompt, derive_seed(ctx.seed, PAPER, "generate", writer.name, name, s) % 2**31,
                                  module_start(sizes[name]))
        rows.append({"seed_index": s, "system": name, "generator": writer.name, "prompt": prompt, "reply": reply,
                     "spec": extract_module(reply)})
    table = pd.DataFrame(rows)
    validate_table(table, f"{PAPER}.generated", generated_suite(len(table)))
    write_parquet(table, paths.generated)
    return {"specs": len(table)}


main = Step(PAPER, "generate", run, load_generate, Paths)


if __name__ == "__main__":
    main()
