"""The small image-to-text models: a CNN encoder and a GRU decoder over step and answer tokens.

A token is a step (``slot=value``), an answer (``ans=value``) or a special token. The direct model is
trained to emit ``ans=...`` only; the CoT model the key steps then ``ans=...``. Decoding turns tokens
into text with the evaluation templates (steps_text.render_chain).
"""

from __future__ import annotations

import torch
from torch import nn

from stages.m3cotbench.scene import GRADES, SLOTS, TASKS

PAD, BOS, EOS = 0, 1, 2


def vocabulary() -> list[str]:
    """Every token: specials, one per (slot, value) step, one per answer value."""
    answers = sorted({a for _, values in TASKS.values() for a in values} | set(GRADES))
    return ["<pad>", "<bos>", "<eos>"] + [f"{s}={v}" for s, vals in SLOTS.items() for v in vals] + \
        [f"ans={a}" for a in answers]


class ImageToText(nn.Module):
    """CNN encoder (three stride-2 conv layers, a linear map, LayerNorm) -> initial GRU state (plus a task
    embedding), also added to every input token embedding -> token logits.

    The image features end in a LayerNorm, not a tanh: each scan's feature vector has unit scale per dimension
    from the start, like the token and task embeddings it is added to. Under a tanh the features were about
    100 times smaller than those embeddings at initialisation; the CoT model first fits the tokens it can
    predict from earlier tokens, the linear map grows a scan-independent offset that saturates the tanh, the
    encoder's gradient vanishes and some initialisations stayed on a plateau that ignores the image."""

    def __init__(self, vocab_size: int, n_tasks: int, channels: int, hidden: int) -> None:
        super().__init__()
        c = channels
        self.encoder = nn.Sequential(
            nn.Conv2d(1, c, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(c, 2 * c, 3, stride=2, padding=1), nn.ReLU(),
            nn.Conv2d(2 * c, 4 * c, 3, stride=2, padding=1), nn.ReLU(),
            nn.Flatten(), nn.Linear(4 * c * 16, hidden), nn.LayerNorm(hidden))
        self.task = nn.Embedding(n_tasks, hidden)
        self.embed = nn.Embedding(vocab_size, hidden)
        self.gru = nn.GRU(hidden, hidden, batch_first=True)
        self.out = nn.Linear(hidden, vocab_size)

    def start(self, images: torch.Tensor, tasks: torch.Tensor, index: torch.Tensor | None = None) -> torch.Tensor:
        """The decoder's initial state (1, batch, hidden) from the image (row ``index`` of ``images`` when
        given: each image encoded once for all its tasks) and the task."""
        feats = self.encoder(images[:, None])
        if index is not None:
            feats = feats[index]
        return (feats + self.task(tasks))[None]

    def step_input(self, tokens: torch.Tensor, h0: torch.Tensor) -> torch.Tensor:
        """The GRU input at every position: the token embedding plus the initial (image + task) state."""
        return self.embed(tokens) + h0[0][:, None]

    def forward(self, images: torch.Tensor, tasks: torch.Tensor, inputs: torch.Tensor,
                index: torch.Tensor | None = None) -> torch.Tensor:
        """Teacher-forced logits (batch, length, vocab) for the input tokens."""
        h0 = self.start(images, tasks, index)
        y, _ = self.gru(self.step_input(inputs, h0), h0)
        return self.out(y)

    @torch.no_grad()
    def generate(self, images: torch.Tensor, tasks: torch.Tensor, max_len: int, temperature: float,
                 generator: torch.Generator | None = None) -> torch.Tensor:
        """Tokens (batch, max_len), greedy at temperature 0, sampled otherwise; positions after EOS are PAD."""
        h0 = h = self.start(images, tasks)
        tok = torch.full((len(images), 1), BOS, dtype=torch.long)
        done = torch.zeros(len(images), dtype=torch.bool)
        out = []
        for _ in range(max_len):
            y, h = self.gru(self.step_input(tok, h0), h)
            logits = self.out(y[:, -1])
            logits[:, PAD] = logits[:, BOS] = -torch.inf
            if temperature == 0:
                nxt = logits.argmax(-1)
            else:
                nxt = torch.multinomial(torch.softmax(logits / temperature, -1), 1, generator=generator)[:, 0]
            nxt = torch.where(done, torch.full_like(nxt, PAD), nxt)
            out.append(nxt)
            done |= nxt == EOS
            tok = nxt[:, None]
        return torch.stack(out, 1)
