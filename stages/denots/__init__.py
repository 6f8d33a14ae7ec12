"""DeNOTS: deeper neural CDE-style models by scaling the time horizon, stabilised by negative feedback.

Paper: DeNOTS (ICLR 2026; abstract in the project's seeds file, title paraphrased here); the fields
follow the paper's official code as described in the issue (GRUCell-based, "anti" feedback by default).

Claim, in our words: for a continuous-time model whose hidden state follows dh/dt = f(x̂(t), h),
driven by a spline x̂ of irregular observations, the number of function evaluations of an
adaptive solver acts as depth; raising it by scaling the horizon (t → D·t) adds expressiveness,
whereas tightening tolerances only adds precision. Without care long horizons blow up; a Negative
Feedback field (GRUCell(x, −h), or GRUCell(x, h) − h) keeps them stable. The paper adds risk bounds
and a Gaussian-process view of discretisation error and reports up to 20% gains over Neural RDEs
and state-space models on four benchmarks.

The miniature: a synthetic damped pendulum sampled at Hawkes-process times (regress the length)
and JapaneseVowels with 30% of frames dropped (classify the speaker); four fields with matched
parameter counts over horizons D, a tolerance sweep at D = 1, and three baselines (GRU-Δt, a
diagonal complex SSM, a Neural RDE on depth-2 log-signatures computed here), each trained for a
few hundred Adam steps with hidden size 16 on one CPU thread, far below the paper's budget, which
the report states. The risk bounds and the GP analysis are not reproduced.
"""
