"""MVCustom: multi-view customisation with camera-pose control (issue 34).

Paper: "MVCustom: Multi-View Customized Diffusion via Geometric Latent Rendering and Completion"
(ICLR 2026; abstract in ../shared/seeds/iclr2026-abstracts.txt).

Claim, in our words: a pose-conditioned multi-view diffusion model customised on a few posed views
of one subject generates that subject from new camera poses; at inference, depth-aware feature
rendering (an anchor view rendered to each target pose with its depth, in the early denoising
steps) and consistency-aware latent completion (re-noising the predicted clean latent where the
rendering leaves holes) make the views geometrically consistent without losing fidelity to the
subject, the best balance of consistency and customisation among the compared methods.

The miniature: a numpy ray caster of boxes and spheres on a checkered ground plane (exact depth,
16 x 16 images); a small multi-view denoiser (convolutions + attention over all views' tokens,
conditioned on each view's camera pose, reference views joined clean) pre-trained on random scenes
and fine-tuned on three posed views of a held-out subject; inference arms plain / + depth-aware
rendering / + latent completion / both, on the same noise, and a warp-only floor. The feature field
is dropped: the anchor's depth is the renderer's exact depth of the reference view.
Steps: data -> pretrain -> evaluate -> report.
"""
