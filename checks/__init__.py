"""Pure policy: the sign-off checks 0-12 and recipe lint, over an immutable snapshot.

Nothing in this package touches the network, the clock or the environment.
Entry points: `checks.engine.evaluate(snapshot) -> Verdict`, and `checks.engine.Completion`, the
evidence rounds that complete a snapshot while the rules run.
"""
