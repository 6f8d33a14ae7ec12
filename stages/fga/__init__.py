"""FGA: flatness-guided test-time adaptation of vision-language models (issue 31).

Paper: "Flatness-Guided Test-Time Adaptation for Vision-Language Models" (ICLR 2026; abstract in
../shared/seeds/iclr2026-abstracts.txt).

Claim, in our words: tuning the prompt with sharpness-aware minimisation (SAPT) reaches a flat
minimum, and at test time scoring each augmented view by its entropy plus the sharpness of its
loss under prompt perturbations, keeping the best views and voting, beats test-time prompt
tuning (TPT) and confidence-filtered voting (Zero) under distribution shift, without any
parameter update at test time.

The miniature: a small CLIP built here on Fashion-MNIST (frozen EfficientNet-Lite0 and MiniLM,
trained projectors, ``stages/core/clip.py``); the prompt is a learnable context vector in the text
projector's input space (MiniLM is frozen and its features cached, so CoOp's token-level context
would need a MiniLM backward pass per test image); test shifts are three corruption kinds at two
severities, validation shifts other kinds; 16 augmented views per image, each encoded once.
Steps: pretrain -> views -> adapt -> report.
"""
