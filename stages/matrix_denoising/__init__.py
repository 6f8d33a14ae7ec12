"""Rank-one rectangular matrix denoising: exact learning dynamics of gradient descent.

Paper: "Gradient Descent Dynamics of Rank-One Matrix Denoising" (ICLR 2026,
OpenReview S5oAnaIbgb).

Claim, in our words: for X = Z + λ u* v*ᵀ (p × n, Gaussian noise of variance 1/n),
gradient descent on ½‖X − u vᵀ‖² over the unit spheres has overlaps ⟨u*, u_t⟩,
⟨v*, v_t⟩ with closed-form large-dimension trajectories; their long-time limits are the
rectangular BBP overlaps above λ_c = (p/n)^{1/4} and zero below; and learning stalls
when the initial overlaps have a particular ratio fixed by λ and p/n.

The miniature: the paper's own size (p = 900, n = 1200) on a grid of λ around λ_c and
three seeds, run by small-step Riemannian gradient descent (``dynamics.py``), with the SVD
of each sampled matrix as the non-GD baseline; and three studies of the flow itself, solved
exactly at finite n by Lanczos (``krylov.py``): the approach of the overlaps at fixed times
to the closed form as n grows (finite-size scaling), a scan of the initial-overlap ratio
around the predicted stall ratio, and the transition located on a fine λ grid by a hinge fit
(``analysis.py``). The closed-form trajectories come from ``theory.py`` (Marchenko-Pastur
integrals of the spectral measures of [[0, X], [Xᵀ, 0]]). Steps: data -> train ->
flow_studies -> evaluate -> report.
"""
