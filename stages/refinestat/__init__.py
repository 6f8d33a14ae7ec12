"""RefineStat (ICLR 2026, issue 25): small LMs writing probabilistic programs under semantic constraints,
refined by MCMC diagnostics.

The paper's claim, in our words: when a small language model writes probabilistic programs statement by
statement, rejecting and resampling only the statements that violate semantic constraints (unknown
distributions, wrong parameter names, undeclared variables, parameter values outside their support, type
mismatches), and then resampling the likelihood or the priors of programs whose posterior fails reliability
diagnostics, gives far more runnable programs than unconstrained or syntax-only decoding, and programs whose
predictive performance is close to expert programs on most data sets.

The miniature: SmolLM2-135M-Instruct writes PyMC 5 programs for three small bundled data sets (Eight Schools,
Dugongs, scikit-learn's diabetes) from a few-shot prompt of programs for other data sets; unconstrained,
syntax-only and RefineStat decoding get the same token and sandbox-run budget per attempt; every program
(and the expert and mis-specified control programs) runs in a persistent sandboxed PyMC worker with NUTS,
arviz diagnostics and PSIS-LOO; the returned program is scored on held-out rows against the expert.
"""
