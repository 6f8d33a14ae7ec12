"""Step ``data``: sources, noisy summaries annotated by the programmatic critic, and the small tokenizer."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pandas as pd

from stages.core.io import write_parquet
from stages.core.seeding import rng
from stages.core.stage import StageContext, Step, out
from stages.core.tokenizer import SmallTokenizer
from stages.text2grad.config import PAPER, DataConfig, NoiseConfig, load_data
from stages.text2grad.critic import annotate
from stages.text2grad.io import validate
from stages.text2grad.models import EXTRA_SPECIALS
from stages.text2grad.task import Noise, noisy_summary, sample_example


@dataclass(frozen=True)
class Paths:
    sources: Path = out("PPO and test prompts with references (Parquet)")
    outputs: Path = out("noisy summaries with the critic's annotations: sft, rm_train, rm_test (Parquet)")
    tokenizer: Path = out("small BPE tokenizer (JSON)")


def _noise(cfg: NoiseConfig) -> Noise:
    return Noise(cfg.p_drop_fact, cfg.p_keep_distractor, cfg.p_alter, cfg.p_repeat)


def build_tables(cfg: DataConfig, seed: int) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Sources of every split, each from its own stream; noisy outputs annotated by the critic."""
    sources, outputs = [], []
    for split, n in (("ppo", cfg.n_ppo), ("test", cfg.n_test)):
        r = rng(seed, PAPER, split)
        for i in range(n):
            ex = sample_example(r, cfg.n_facts, cfg.n_distractors)
            sources.append({"split": split, "id": i, "source": ex.source_text(), "reference": ex.reference()})
    for split, n, noise in (("sft", cfg.n_sft, cfg.sft_noise), ("rm_train", cfg.n_rm_train, cfg.rm_noise),
                            ("rm_test", cfg.n_rm_test, cfg.rm_noise)):
        r = rng(seed, PAPER, split)
        for i in range(n):
            ex = sample_example(r, cfg.n_facts, cfg.n_distractors)
            output = noisy_summary(ex, _noise(noise), r)
            a = annotate(output, ex)
            outputs.append({"split": split, "id": i, "source": ex.source_text(), "reference": ex.reference(),
                            "output": output, "annotation": a.to_json(), "critique": a.critique,
                            "word_scores": " ".join(map(str, a.word_labels)), "n_words": len(a.word_labels)})
    return pd.DataFrame(sources), pd.DataFrame(outputs)


def run(cfg: DataConfig, paths: Paths, ctx: StageContext) -> dict[str, Any]:
    """Build, validate and write the tables; train the tokenizer on the training texts only."""
    sources, outputs = build_tables(cfg, ctx.seed)
    validate(sources, outputs)
    train = outputs[outputs.split != "rm_test"]
    texts = [*train.source, *train.output, *train.critique]
    tok = SmallTokenizer.train(texts, cfg.vocab_size, extra_specials=EXTRA_SPECIALS)
    write_parquet(sources, paths.sources)
    write_parquet(outputs, paths.outputs)
    tok.save(paths.tokenizer)
    return {"sources": len(sources), "outputs": len(outputs), "vocab": tok.vocab_size}


main = Step(PAPER, "data", run, load_data, Paths)


if __name__ == "__main__":
    main()
