"""Training the multi-view denoiser with Lightning: pre-training on random scenes and fine-tuning on a subject.

Each example is all views of one scene; a random 1..max_refs of them (a random subset, in random order)
are clean references, the rest are noised targets, so the same model serves pre-training on random
scenes, fine-tuning on a subject's reference views (some references predict the others) and sampling
of unseen poses with every reference joined.
"""

from __future__ import annotations

import copy
import math
from pathlib import Path

import lightning
import torch

from stages.core.io import InputError, load_safetensors, save_safetensors
from stages.core.trainer import TrainerConfig, build_trainer
from stages.mvcustom.diffusion import MultiViewDenoiser, Rig, denoising_loss


def random_roles(batch: int, n_views: int, max_refs: int, gen: torch.Generator) -> tuple[torch.Tensor, torch.Tensor]:
    """(view order (b, v), is_ref (b, v)): a random permutation per example, its first k ~ U{1..max_refs} references."""
    order = torch.argsort(torch.rand(batch, n_views, generator=gen), dim=1)
    k = torch.randint(1, max_refs + 1, (batch, 1), generator=gen)
    return order, torch.arange(n_views)[None] < k


def cosine_lr_factor(step: int, total: int, floor: float) -> float:
    """Learning-rate multiplier decaying from 1 at step 0 to ``floor`` at ``total`` along half a cosine."""
    return floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(step, total) / max(total, 1)))


def ema_update(ema: torch.nn.Module, model: torch.nn.Module, decay: float) -> None:
    """θ_ema ← decay · θ_ema + (1 − decay) · θ, parameter by parameter (exponential moving average of weights)."""
    with torch.no_grad():
        for pe, pm in zip(ema.parameters(), model.parameters(), strict=True):
            pe.lerp_(pm, 1 - decay)


class DenoiserModule(lightning.LightningModule):
    """The denoising loss on batches of (images in [-1, 1] (b, v, 3, s, s), poses (b, v, 2) in degrees).

    With ``lr_floor`` < 1 the learning rate decays along a cosine to ``lr_floor`` × lr over the run; with
    ``ema_decay`` > 0 an exponential moving average of the weights is kept (and used by :func:`fit`); with
    ``swap_weight`` > 0 the pose-swap hinge is added to the loss (:func:`stages.mvcustom.diffusion.denoising_loss`).
    """

    def __init__(self, model: MultiViewDenoiser, alpha_bar: torch.Tensor, lr: float, max_refs: int,
                 seed: int, log_every: int, rig: Rig, ema_decay: float = 0.0, lr_floor: float = 1.0,
                 swap_weight: float = 0.0, swap_margin: float = 0.0) -> None:
        super().__init__()
        self.swap_weight, self.swap_margin = swap_weight, swap_margin
        self.model, self.lr, self.max_refs, self.log_every, self.rig = model, lr, max_refs, log_every, rig
        self.ema_decay, self.lr_floor = ema_decay, lr_floor
        self.ema = copy.deepcopy(model).requires_grad_(False) if ema_decay > 0 else None
        self.register_buffer("alpha_bar", alpha_bar)
        self.gen = torch.Generator().manual_seed(seed)
        self.log_rows: list[dict[str, float]] = []

    def training_step(self, batch: list[torch.Tensor], batch_idx: int) -> torch.Tensor:
        x0, pose = batch
        b, v = x0.shape[:2]
        order, is_ref = random_roles(b, v, min(self.max_refs, v - 1), self.gen)
        x0 = torch.take_along_dim(x0, order[..., None, None, None], dim=1)
        pose = torch.take_along_dim(pose, order[..., None], dim=1)
        code, rays = self.rig.condition(pose)
        loss = denoising_loss(self.model, x0, code, is_ref, self.alpha_bar, self.gen, rays, self.swap_weight,
                              self.swap_margin)
        step = self.global_step + 1
        if step % self.log_every == 0 or step == self.trainer.max_steps:
            self.log_rows.append({"step": step, "loss": float(loss.detach())})
        return loss

    def on_train_batch_end(self, outputs: object, batch: object, batch_idx: int) -> None:
        if self.ema is not None:
            ema_update(self.ema, self.model, self.ema_decay)

    def configure_optimizers(self) -> dict[str, object]:
        opt = torch.optim.AdamW(self.model.parameters(), lr=self.lr, weight_decay=0.0)
        total = self.trainer.max_steps
        sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: cosine_lr_factor(s, total, self.lr_floor))
        return {"optimizer": opt, "lr_scheduler": {"scheduler": sched, "interval": "step"}}


def fit(model: MultiViewDenoiser, images: torch.Tensor, poses: torch.Tensor, alpha_bar: torch.Tensor,
        batch_size: int, lr: float, max_refs: int, trainer: TrainerConfig, seed: int, rig: Rig,
        ema_decay: float = 0.0, lr_floor: float = 1.0, swap_weight: float = 0.0, swap_margin: float = 0.0) \
        -> list[dict[str, float]]:
    """Train ``model`` in place on scenes (n, v, 3, s, s) in [-1, 1] with poses (n, v, 2) in degrees (conditioned
    through ``rig``); the logged losses.

    With ``ema_decay`` > 0 the model ends with the moving average of its weights."""
    lightning.seed_everything(seed % 2**32, workers=True, verbose=False)
    module = DenoiserModule(model, alpha_bar, lr, max_refs, seed, max(1, trainer.max_steps // 50), rig, ema_decay,
                            lr_floor, swap_weight, swap_margin)
    data = torch.utils.data.TensorDataset(images, poses)
    if len(data) < batch_size:   # a single subject: its views repeated, each copy with its own roles and noise
        reps = -(-batch_size // len(data))
        data = torch.utils.data.TensorDataset(images.repeat(reps, 1, 1, 1, 1), poses.repeat(reps, 1, 1))
    loader = torch.utils.data.DataLoader(data, batch_size=batch_size, shuffle=True, drop_last=True,
                                         generator=torch.Generator().manual_seed(seed))
    from lightning.pytorch.callbacks import TQDMProgressBar

    bar = [TQDMProgressBar(refresh_rate=max(1, trainer.max_steps // 100))] if trainer.enable_progress_bar else []
    build_trainer(trainer, max_epochs=-1, callbacks=bar).fit(module, loader)
    if module.ema is not None:
        model.load_state_dict(module.ema.state_dict())
    model.eval()
    return module.log_rows


def new_denoiser(size: int, channels: int, heads: int, seed: int, rays: bool, prediction: str,
                 ray_blocks: bool = False) -> MultiViewDenoiser:
    """A freshly initialised denoiser (initialisation seeded)."""
    torch.manual_seed(seed)
    return MultiViewDenoiser(size, channels, heads, rays=rays, prediction=prediction, ray_blocks=ray_blocks)


def save_denoiser(model: MultiViewDenoiser, alpha_bar: torch.Tensor, path: Path) -> None:
    """The denoiser's weights and its noise schedule in one safetensors file."""
    save_safetensors({**{f"model.{k}": v for k, v in model.state_dict().items()}, "alpha_bar": alpha_bar}, path)


def load_denoiser(path: Path, size: int, channels: int, heads: int, rays: bool, prediction: str,
                  ray_blocks: bool = False) -> tuple[MultiViewDenoiser, torch.Tensor]:
    """(denoiser in eval mode, ᾱ schedule) from a file written by :func:`save_denoiser`; refuses a mismatch."""
    tensors = load_safetensors(path)
    if "alpha_bar" not in tensors:
        raise InputError(f"{path}: missing tensor 'alpha_bar'")
    alpha_bar = tensors.pop("alpha_bar")
    if alpha_bar.ndim != 1 or not bool(((alpha_bar > 0) & (alpha_bar < 1)).all()):
        raise InputError(f"{path}: 'alpha_bar' must be a vector in (0, 1)")
    model = MultiViewDenoiser(size, channels, heads, rays=rays, prediction=prediction, ray_blocks=ray_blocks)
    try:
        model.load_state_dict({k.removeprefix("model."): v for k, v in tensors.items()}, strict=True)
    except RuntimeError as err:
        raise InputError(f"{path}: weights do not match mvcustom.pretrain's denoiser: {str(err).splitlines()[0]}") \
            from None
    return model.eval(), alpha_bar

