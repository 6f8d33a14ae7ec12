"""NDM: unsupervised discovery of interpretable subspaces by neighbour distance minimisation.

Paper: ICLR 2026 (abstract in the project's seed list).

Claim, in our words: an orthogonal rotation of a representation space and a partition of the
rotated dimensions into subspaces, learned by minimising every point's distance to its nearest
neighbour inside each subspace (subspaces with high KSG mutual information merged), recovers the
model's "variables": ground-truth subspaces in toy models, and subspaces in which the patching
effects of known circuits (IOI, greater-than) concentrate (Gini 0.71 vs 0.21-0.375 for baselines).

The miniature: a toy tied ReLU autoencoder on grouped sparse features (ground truth known; ARI of
the feature-to-subspace assignment), and SmolLM2-135M's residual stream at one layer and the last
position on templated IOI and greater-than prompts (Gini of one-subspace patching effects). Baselines
identity / random / PCA are cut into NDM's subspace sizes. Steps: toy, prompts -> activations -> fit
-> patch, report.
"""
