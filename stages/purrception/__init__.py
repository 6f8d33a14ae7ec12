"""Purrception: variational flow matching over vector-quantised latents.

Paper: "Purrception: Variational Flow Matching for Vector-Quantized Image Generation"
(Matişan et al., ICLR 2026; OpenReview SA8xDYrUYB, arXiv 2510.01478).

Claim, in our words: generating VQ image tokens by flow matching in the codebook's embedding
space while the network predicts a categorical posterior over code indices (the velocity is
(E[e_k] − z_t)/(1 − t)) trains in fewer steps than continuous flow matching (regressing the
velocity or the endpoint) and than discrete flow matching (masked tokens), reaches a
competitive FID, and allows temperature-controlled sampling.

The miniature: Fashion-MNIST resized to 20×20 instead of ImageNet 256²; a VQ-VAE trained here
(64 codes, 5×5 latent grid) instead of a pretrained VQGAN; the same small bidirectional
transformer (``stages.core.transformer.Block``) trained for the same number of steps under the
four objectives, 2 seeds; "FID" is the Fréchet distance in the feature space of a small
classifier trained here on a few hundred samples, so absolute numbers mean nothing outside this
pipeline; only the comparison between objectives does. The paper's scale (hundreds of thousands
of GPU steps) is out of reach on 2 CPU cores; the report states the counts.
"""
