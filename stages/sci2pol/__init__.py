"""Sci2Pol: a policy-brief benchmark and a curated paper-to-brief training corpus.

Paper: "Sci2Pol-Bench and Sci2Pol-Corpus" (ICLR 2026).

Claim, in our words: writing a policy brief from a scientific paper can be benchmarked
task by task (autocompletion, understanding, summarization, generation, verification)
if open answers are scored by an LLM judge with rubrics, because the judge agrees with
experts where ROUGE and BERTScore do not; and a corpus of (paper, brief) pairs built by
linking policy documents to the papers they cite, screening, splitting long documents,
filtering by similarity and polishing style improves every model fine-tuned on it.

The miniature: a generator of scientific "papers" and of policy documents that cite
them, with known ground truth (which citations are real links, and a quality label for
every candidate brief made by controlled degradations: a missing section, a
hallucinated number, a wrong direction of effect, an off-topic brief, a verbatim copy);
benchmark papers use topics and templates disjoint from the corpus papers. The corpus
funnel (link, screen, split, filter, polish) runs on generated documents; two judges
share one interface: a rubric judge that reads the generator's ground truth (a ceiling)
and an LM judge (SmolLM2-135M-Instruct reading the logits of the score tokens), compared
with ROUGE-L and a MiniLM greedy-token BERTScore by rank correlation with the labels.
"""
