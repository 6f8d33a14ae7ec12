"""``TrainerConfig``: the Lightning trainer params shared by every training stage.

The same stage runs on a laptop CPU (default profile) or on GPUs / several nodes
(paper profile) by changing these params only. Multi-device strategies (DDP) are
launched as a stage subprocess (e.g. torchrun), never inside a Prefect task.
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import Field

from stages.core.config import Section

Precision = Literal["32-true", "64-true", "16-mixed", "bf16-mixed", "bf16-true", "16-true"]


class TrainerConfig(Section):
    """Lightning ``Trainer`` arguments; validated like any other params section."""

    accelerator: Literal["cpu", "gpu", "cuda", "mps", "auto"] = "cpu"
    devices: int | Literal["auto"] = 1
    strategy: str = "auto"
    num_nodes: int = Field(default=1, ge=1)
    precision: Precision = "32-true"
    max_steps: int = Field(ge=1)
    deterministic: bool = True
    log_every_n_steps: int = Field(default=10, ge=1)
    enable_progress_bar: bool = True

    def trainer_kwargs(self) -> dict[str, Any]:
        """Keyword arguments for ``lightning.Trainer``."""
        return self.model_dump()


def build_trainer(cfg: TrainerConfig, **extra: Any) -> Any:
    """A ``lightning.Trainer`` from the config; ``extra`` adds callbacks, loggers, paths."""
    import logging

    import lightning

    # the per-run banner (GPU/TPU availability, tips) repeats for every run of a grid; keep warnings
    logging.getLogger("lightning.pytorch.utilities.rank_zero").setLevel(logging.WARNING)
    kwargs = {"logger": False, "enable_checkpointing": False, "enable_model_summary": False}
    kwargs.update(cfg.trainer_kwargs())
    kwargs.update(extra)
    return lightning.Trainer(**kwargs)
