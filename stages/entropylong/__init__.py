"""EntropyLong: long-context training data from contexts verified to reduce predictive uncertainty.

Paper: "EntropyLong: Effective Long-Context Training via Predictive Uncertainty" (ICLR 2026;
arXiv 2510.02330).

Claim, in our words: find the positions of a document where a language model is most
uncertain (entropy above μ_H + α·σ_H), retrieve passages related to the text around them,
and keep only the passages that, prepended to the document, measurably lower the model's
entropy at that position (ΔI = (H − H′)/H > ε). Sequences of verified contexts followed by
the document teach a model to use long-range context better than plain concatenation or
retrieval without verification (RULER 87.37 vs 85.22 for NExtLong, 85.82 without
verification; mean ΔI of kept contexts 0.68).

The miniature: SmolLM2-135M is the entropy model and, with LoRA adapters, the model trained on
each variant (a model that already reads its context, as the paper's Llama-3-8B does); a few
hundred Wikipedia documents of 128 tokens; a 2,500-chunk MiniLM/faiss Wikipedia index as the
retrieval pool; a ΔI null (random pool chunks at the same positions) beside the ε rule; the first
32 tokens of each document (where a topical context completes the title) measured but excluded
from the construction; equal-token training sequences of 256 tokens, 3 seeds. The primary metric
is how much each adapted model gains on held-out documents from their retrieved contexts over
random text of the same length.
"""
