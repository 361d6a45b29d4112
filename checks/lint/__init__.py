"""Recipe lint: line-anchored findings on the recipes, master configs and changelog a PR touches.

Reviewers kept catching the same mistakes by hand; each rule here catches
one of them on every PR, signed off or not. A rule is one module with `ID`,
`SEVERITY` and one pure function `check(ctx) -> Iterator[Finding]`; its
docstring documents the rule. Adding a rule is adding its module to
`checks.registry.LINT`; `checks.rule.run` runs it.

Its findings are advice: inline review comments and the verdict's "Recipe
lint" row, which blocks the sign-off only under `lint: blocking`
(`checks.engine`).
"""
