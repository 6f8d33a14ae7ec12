"""Text2Grad: span-level rewards from natural-language critiques.

Paper: "Text2Grad: Reinforcement Learning from Natural Language Feedback" (Wang et al.,
ICLR 2026; arXiv 2505.22338; code github.com/microsoft/Text2Grad).

Claim, in our words: a critique says *why* an output is good or bad and *where*; a reward
model that writes the critique and then scores each word (+1 in a good span, −1 in a poor
one), with word scores mapped to tokens, gives PPO a token-level reward that trains a
better policy than one scalar reward per output; dense labels of most tokens, or a reward
model without the critique, do worse.

The miniature: a synthetic fact-summarisation task (facts stated plainly, distractors
hedged) whose critiques a program writes exactly in the paper's JSON format; a
generative reward model and a policy, both TinyGPTs trained from scratch on a small BPE
vocabulary; PPO with a value head and token-level GAE under four reward schemes (scalar,
Text2Grad, dense, no-critique), three seeds each, a few dozen PPO steps on 2 CPU cores.
"""
