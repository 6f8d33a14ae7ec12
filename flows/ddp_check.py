"""Multi-process DDP equals one process with the doubled batch: a tiny Lightning regression.

DDP is launched as its own process group by torchrun, never inside a Prefect task:

    torchrun --standalone --nproc-per-node 2 -m flows.ddp_check --devices 2 --batch 8 --out ddp.json  # CPU, gloo
    python -m flows.ddp_check --devices 1 --batch 16 --out single.json
    # GPUs / nodes: torchrun --nnodes N --nproc-per-node G --rdzv-endpoint HOST:PORT -m flows.ddp_check \
    #   --accelerator gpu --devices G --num-nodes N --batch B --out ddp.json
"""

from __future__ import annotations

import argparse
import json
import os
from pathlib import Path

import stages  # noqa: F401  (offline switches)
from stages.core.trainer import TrainerConfig, build_trainer

SAMPLES, FEATURES = 256, 4


def dataset(seed: int = 0):
    """A fixed linear-regression data set (inputs, targets)."""
    import torch

    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(SAMPLES, FEATURES, generator=gen)
    w = torch.arange(1.0, FEATURES + 1.0)
    return torch.utils.data.TensorDataset(x, x @ w + 0.1 * torch.randn(SAMPLES, generator=gen))


def make_module(lr: float):
    """A linear model trained with plain SGD on the mean squared error."""
    import lightning
    import torch

    class Regression(lightning.LightningModule):
        """y ≈ x·w + b."""

        def __init__(self) -> None:
            super().__init__()
            torch.manual_seed(0)
            self.linear = torch.nn.Linear(FEATURES, 1)

        def training_step(self, batch, _index):
            """Mean squared error of one batch."""
            x, y = batch
            return torch.nn.functional.mse_loss(self.linear(x).squeeze(-1), y)

        def configure_optimizers(self):
            """Plain SGD: no state that could differ between process counts."""
            return torch.optim.SGD(self.parameters(), lr=lr)

    return Regression()


def main(argv: list[str] | None = None) -> None:
    """Train for ``--steps`` steps and write the final weights (rank 0)."""
    import torch

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--devices", type=int, default=1)
    parser.add_argument("--num-nodes", type=int, default=1)
    parser.add_argument("--accelerator", default="cpu")
    parser.add_argument("--batch", type=int, required=True, help="batch size per process")
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--out", type=Path, required=True)
    args = parser.parse_args(argv)
    cfg = TrainerConfig(accelerator=args.accelerator, devices=args.devices, num_nodes=args.num_nodes,
                        strategy="ddp" if args.devices * args.num_nodes > 1 else "auto", max_steps=args.steps,
                        enable_progress_bar=False)
    module = make_module(args.lr)
    data = dataset()
    # Rank r of W takes samples r, r+W, ...: step i of W processes sees the samples of step i of one.
    world, rank = int(os.environ.get("WORLD_SIZE", "1")), int(os.environ.get("RANK", "0"))
    sampler = torch.utils.data.DistributedSampler(data, num_replicas=world, rank=rank, shuffle=False)
    loader = torch.utils.data.DataLoader(data, batch_size=args.batch, sampler=sampler)
    trainer = build_trainer(cfg, max_epochs=-1, use_distributed_sampler=False)
    trainer.fit(module, loader)
    if trainer.is_global_zero:
        weights = [float(v) for v in torch.cat([p.detach().flatten() for p in module.parameters()])]
        args.out.write_text(json.dumps({"world_size": trainer.world_size, "batch_per_process": args.batch,
                                        "steps": args.steps, "weights": weights}))


if __name__ == "__main__":
    main()
