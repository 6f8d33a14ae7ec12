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

The miniature: SmolLM2-135M is the entropy model; a few dozen Wikipedia / enwiki documents
of ~200 tokens; a 2,500-chunk MiniLM/faiss Wikipedia index as the retrieval pool; a small
BPE tokenizer and a 2-layer TinyGPT trained from scratch on 512-token sequences of each
variant (equal token counts, 3 seeds). The whole method runs, but the trained model is
far too small and sees far too few tokens to learn long-context retrieval skills, so the
report states what scale would settle the comparison.
"""
