"""M3CoTBench (ICLR 2026, issue 32): scoring chain-of-thought reasoning, not only answers, in medical images.

The paper's claim, in our words: a benchmark that scores the reasoning path (correctness of steps
against annotated key steps, efficiency, impact of CoT on accuracy, consistency of paths) reveals
what answer accuracy hides: models that answer right through unreliable reasoning, and tasks where
CoT hurts. The miniature: procedural "scans" (three modalities with distinct textures, one lesion
whose shape, size and location determine a finding -> diagnosis -> management), six task types at
three difficulty levels, each with a gold answer and gold key steps; small CNN + GRU image-to-text
models trained here (direct and chain-of-thought), a rule-based reasoner reading the true scene, an
unfaithful reasoner (right answers, wrong steps) and a shortcut (right answers, no steps); a step
parser and a MiniLM step matcher with a threshold chosen on labelled validation pairs. Step templates
used to tune the matcher and to render the evaluated chains are disjoint.
"""
