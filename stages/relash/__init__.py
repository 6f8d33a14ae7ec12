"""ReLaSH: generating hypergraphs with hyperlink attributes through a joint latent space.

Paper: "ReLaSH: Reconstructing Joint Latent Spaces for Efficient Generation of Synthetic
Hypergraphs with Hyperlink Attributes" (ICLR 2026).

Claim, in our words: embed every hyperlink and its attributes in one latent space with a
likelihood model (degree-corrected independent memberships σ(u_jᵀ z_i + α_i), attributes
linear in u_j), learn the distribution of the fitted latents with a distribution-free
generator (score-based diffusion), then sample latents and decode them; the synthetic
hyperlinks and attributes are more faithful than those of Gaussian-latent, GAN and VAE
generators.

The miniature: two real face-to-face contact hypergraphs shipped in hypergraphx
(High-School 2013, 327 students in 9 classes; a workplace, 92 employees in 5 departments),
hyperlinks = maximal cliques per 20-s window, deduplicated, with two attributes (time of
day of first appearance, log of the group's observed windows that day), split by time.
Baselines: a degree-preserving independent-membership null, a Gaussian fitted to ReLaSH's
own latents (tests "distribution-free"), and a VAE on incidence + attributes; every method
decodes with one rule. Fidelity to the latest hyperlinks (test) is measured by structure
and attribute distances and a Fréchet distance in a fixed spectral featurisation that no
method trains. No GAN baseline and no MIMIC-III (not available offline).
Steps: data -> train -> evaluate -> report.
"""
