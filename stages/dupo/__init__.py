"""DuPO: dual-learning preference optimisation with label-free rewards.

Paper: DuPO: Enabling Reliable LLM Self-Verification via Dual Preference Optimization, ICLR 2026
(arXiv 2508.14460).

Claim, in our words: a task's input can be split into a known and an unknown part, and a dual
task that reconstructs the unknown part from the primal output and the known part gives a
reward without labels; optimising the primal model with that reward (GRPO) improves it about
as much as RL with oracle labels (+6.2 points on three math benchmarks, +2.1 COMET over 756
translation directions), the same signal reranks candidate answers at inference (+9.3 points),
and keeping only dual questions that are answerable with a unique answer matters.

The miniature: templated arithmetic word problems from expression chains (2-4 operations,
floor divisions and remainders among them), a character-level transformer under 1M parameters
trained here on worked solutions of both the primal and the dual task, then GRPO with equal
budgets under three rewards (oracle labels; DuPO's dual reconstruction; DuPO without the
filter), and best-of-N reranking of sampled answers by dual reconstruction vs majority vote.
Translation, the paper's other task, is not reproduced at any profile.
"""
