"""ESPO: ELBO-based sequence-level policy optimisation for masked diffusion language models.

Paper: ELBO-based Sequence-level Policy Optimization (ESPO), ICLR 2026.

Claim, in our words: diffusion LMs have no cheap token-level likelihoods, so token-level
RL objectives (GRPO-style ratios of mean-field or per-token ELBO terms) are ill-founded
and unstable; treating the whole completion as one action, with the ELBO as its
log-likelihood proxy, a per-token-normalised ratio exp((ELBO_θ − ELBO_old)/L) and a k2 KL
estimate, trains stably and far better (Countdown 81% and Sudoku 86% vs about 23-48% for
d1/wd1 on LLaDA-8B).

The miniature: no 8B model; a small masked-diffusion transformer (core bidirectional
blocks) trained here from scratch on generated 4×4 Sudoku and 3-number Countdown, warm
started by supervised masked-diffusion training to 20-50% validation success, then RL
with a GRPO loop whose objectives differ only in the likelihood proxy and the action
granularity (d1, token-level ELBO ratios, ESPO), plus the KL-estimator and 1/L ablations.
"""
