"""SSG: scaled spatial guidance for visual autoregressive (next-scale) image models.

Paper: "Scaled Spatial Guidance" for visual autoregressive models (ICLR 2026; abstract in
../shared/seeds/iclr2026-abstracts.txt, issue 29).

Claim, in our words: a VAR model predicts an image coarse to fine, one token map per scale, and at
inference drifts from that hierarchy. Without any training, adding to the logits of scale k their
difference from a prior built from scale k−1 (ℓ_k + β(ℓ_k − ℓ_prior)) makes each scale contribute the
detail earlier scales did not explain; a prior built in the DCT domain (Discrete Spatial Enhancement:
the coarse map's low frequencies, the interpolated map's high ones) works where plain bilinear or
nearest-neighbour priors give little, and the extra latency is negligible.

The miniature: Fashion-MNIST at 28 × 28 instead of ImageNet 256²; a multi-scale residual VQ tokenizer
(scales 1, 2, 4, 7 on a 7 × 7 latent grid, one shared codebook) and a small class-conditional
block-causal next-scale transformer (core blocks) trained here instead of VAR-d16/d30; the Fréchet
distance in the feature space of purrception's Fashion-MNIST classifier instead of Inception FID.
Every knob (β per prior, the baseline's temperature) is chosen on a validation split; the numbers are
reported on the test split.
"""
