"""Transformers learn mirror descent in context for Mixture of Transition Distributions.

Paper: "Transformers Learn Latent Mixture Models In-Context via Mirror Descent"
(D'Angelo & Flammarion, ICLR 2026; OpenReview SHidElLSVt, arXiv 2604.10848).

Claim, in our words: when each next token is drawn from π*(y_{t−g}, ·) with a lag g ~ λ
and λ is fresh per sequence, predicting well means estimating λ in context; one step
of entropic mirror descent on the in-context log-likelihood is a first-order
approximation of the Bayes predictor, a 3-layer transformer computes it exactly, and
trained transformers converge to that construction (deeper ones to more steps).

The miniature: q = 5 tokens, m = 3 lags, π* seeded and strictly positive, λ ~ Dir(1);
the construction (``attention_only.set_one_step_mirror_descent``) is checked against a
separate implementation of mirror descent (``mirror_descent.py``); attention-only models
of 3 and 5 layers and a standard transformer are trained from scratch on about 3M
tokens each on 2 CPU cores (3000 steps), far less than the paper, which the report states.
"""
