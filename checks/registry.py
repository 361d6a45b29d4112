"""The one registry: every rule of the verdict, in the order its rows are shown.

Checks 0-12 are the spec's gate, one row each. Recipe lint rules run on
every PR, signed off or not; their findings are advice (inline review
comments), summed up on the "Recipe lint" row. "Signer's own words" and
"Complete evidence" are rows beyond the spec, shown only when they fail.
Adding a rule is adding its module here.
"""

from __future__ import annotations

from types import ModuleType

from . import lint
from .lint import (
    car_v2,
    changelog_append_only,
    changelog_pr_link,
    changelog_unknown_key,
    cpus_per_task,
    master_recipe_parity,
    spec_decode_chat_template,
    yaml_syntax,
)
from .result import Severity
from .rule import Rule
from .rules import (
    check00_codeowner,
    check01_sweep,
    check02_evals,
    check03_recipe_link,
    check04_reuse_command,
    check05_checklist,
    check06_images,
    check07_deprecation,
    check08_architecture,
    check09_chat_template,
    check10_engine_patches,
    check11_golden_al,
    check12_append_only,
)
from .rules import extra14_complete_evidence as completeness
from .rules import extra15_own_words as standing

CHECKS: tuple[Rule, ...] = tuple(Rule.of_check(m) for m in (
    check00_codeowner,
    check01_sweep,
    check02_evals,
    check03_recipe_link,
    check04_reuse_command,
    check05_checklist,
    check06_images,
    check07_deprecation,
    check08_architecture,
    check09_chat_template,
    check10_engine_patches,
    check11_golden_al,
    check12_append_only,
))

LINT: tuple[Rule, ...] = tuple(Rule.of_lint(m) for m in (
    yaml_syntax,
    car_v2,
    spec_decode_chat_template,
    master_recipe_parity,
    cpus_per_task,
    changelog_pr_link,
    changelog_append_only,
    changelog_unknown_key,
))

EXTRA: tuple[Rule, ...] = (
    Rule("own-words", standing.OWN_WORDS_NUMBER, standing.OWN_WORDS_NAME, Severity.ERROR, standing.check, "extra",
         standing),
    Rule("complete-evidence", completeness.NUMBER, completeness.NAME, Severity.ERROR, completeness.check, "extra",
         completeness),
)

RULES: tuple[Rule, ...] = CHECKS + LINT + EXTRA


def rules_of(*modules: ModuleType) -> tuple[Rule, ...]:
    """The registered rules defined in `modules` (`checks.lint`: every lint rule), in registry order."""
    return tuple(r for r in RULES if r.module in modules or (r.kind == "lint" and lint in modules))
