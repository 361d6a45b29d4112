"""Pure policy: the sign-off checks 0-12 and recipe lint, over an immutable snapshot.

Nothing in this package touches the network, the clock or the environment.
Entry point: `checks.engine.evaluate(snapshot) -> Verdict`.
"""
