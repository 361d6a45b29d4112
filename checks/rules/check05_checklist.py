"""Check 5 — the sign-off uses the LATEST checklist template.

## What it enforces

The sign-off's first item affirms the reviewer used the current
`docs/PR_REVIEW_CHECKLIST.md`; this check verifies it: every item of the
current template is in the sign-off, checked or explained. Wording may drift,
items may not go missing.

## Why

A sign-off copied from an older template silently drops the items added
since (a stale copy lacking "Verified that speculative decoding PRs uses chat
templates ..." never affirmed it): the reviewer must have gone through the
checklist as it stands on the base branch.

## How it decides

The template is the checklist under the "Template" heading of that file on
the base branch tip (`Policy.checklist`): its fenced code block, or the
section's text when it has none (`signoff.template`). It is parsed exactly as
a sign-off is (one Markdown reader, `checks.facts.markdown`), so template and
sign-off items are read by one grammar. No checklist file on the base branch:
there is no template to hold the sign-off to (N/A, says so). A file without a
"Template" heading or without items under it is UNDECIDED ("cannot decide").

Deterministic matching (wording may drift, items may not go missing):

- Text is normalized: markdown links become their text, URLs, markdown and
  punctuation drop out, case folds; sign-off words absent from the template's
  vocabulary are replaced by their closest template word (difflib, cutoff
  0.8), which absorbs small typos.
- Similarity is on words (difflib.SequenceMatcher, no autojunk): the larger
  of the match ratio and, when the shorter text has at least 40% of the
  longer one's words, the share of the shorter text found in the longer one
  (a trimmed "Please link to ..." or an appended run URL still matches).
- A template item and a sign-off item correspond when the score is at least
  0.8 (`THRESHOLD`) and the template item is the one the sign-off item
  resembles most (so a near-duplicate of a sibling cannot stand in for a
  missing item). Pairs are assigned one-to-one, best score first, ties by
  template order then sign-off order.

PASS when every template item corresponds to a sign-off item that is checked,
or unchecked but explained. "Explained" means: the additional detail section
holds more than the template's placeholder ("- insert any additional info
here"), and it mentions the item's group (a top-level item and its sub-items),
on word stems (the first 6 letters of a word of 5+ letters, function words
dropped), in either of two ways:

- the section shares a stem with the group that no other group uses; or
- one of its lines describes the group best: each stem used by at most half
  the groups weighs log(groups / groups using it), and the line explains the
  group(s) of which it mentions the largest share of total weight. So an
  item whose every word recurs in other items (the evals item: "passes",
  "evals" recur in the architecture item, "Please link to GitHub Action
  workflow" in the validation item) is explained by "- Evals: not run, a
  docs-only PR", which mentions more of it than of any other.

An unchecked sub-item is explained through its group, so "single-node recipe
publication: not applicable" covers the recipe item and its "I linked the
upstream PR" sub-item. Extra sign-off items the template no longer has are
ignored.

## Passing example

Every current item present and `[x]`, or `[ ]` with
"The golden-AL item is not applicable: ..." (or, for the evals
item, "- Evals: not applicable, docs-only PR") in the detail section.

## Failing example

A sign-off copied from an older template that lacks "Verified that
speculative decoding PRs uses chat templates ..." (stale copy).
"""

from __future__ import annotations

import difflib
import math
import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from checks.context import Context
from checks.facts import markdown, signoff
from checks.result import CheckResult, Status

NUMBER = 5
NAME = "latest checklist"

THRESHOLD = 0.8
COVER_MIN_LENGTH = 0.4  # containment counts only when the shorter text has >= 40% of the longer's words
TYPO_CUTOFF = 0.8
MAX_CANONICAL_WORDS = 2_000  # typo lookups per sign-off; beyond it words are compared as written
_SHOWN = 3

_URL = re.compile(r"https?://\S+")
_WORD = re.compile(r"[^\W_]+")  # a run of letters and digits (no whitespace is one)
# Function words long enough to be stems but saying nothing about an item.
_STOPWORDS = frozenset("""about above across after again against along already among another because before
being below between could doesn during every other should since their there these those through under until
where which while would without within""".split())


@dataclass(frozen=True)
class _TemplateItem:
    item: signoff.ChecklistItem  # its line is a line of the checklist file
    group: int  # index of its top-level item
    words: tuple[str, ...]


def check(ctx: Context) -> CheckResult:
    sign = ctx.signoff
    if sign is None:
        return _fail(f'no sign-off found: no comment begins with "{ctx.policy.signoff_phrase}"')
    path = ctx.policy.checklist
    text = ctx.snap.policy.get(path)
    if text is None:
        return CheckResult(NUMBER, NAME, Status.NA,
                           f"{path} is not on the base branch: there is no checklist template to hold the sign-off to")
    template = signoff.checklist_template(ctx)
    if template is None:
        return CheckResult.undecided(NUMBER, NAME, f"{path} has no \"Template\" heading, so the sign-off cannot be "
                                     "checked against the template")
    items = _template_items(template.items)
    if not items:
        return CheckResult.undecided(NUMBER, NAME, f"{path} has no checklist items under its \"Template\" heading, "
                                     "so the sign-off cannot be checked")
    vocabulary = sorted({w for t in items for w in t.words})
    known = frozenset(vocabulary)
    typos: dict[str, str] = {}
    signed = [_words(i.text, vocabulary, known, typos) for i in sign.items]
    match = _assign(items, signed)

    missing = [t for t in items if t.item.line not in match]
    unchecked = [t for t in items if t.item.line in match and not sign.items[match[t.item.line]].checked]
    explained_groups = _explained_groups(items, template.detail, sign.detail) if unchecked else set()
    unexplained = [t for t in unchecked if t.group not in explained_groups]
    if missing or unexplained:
        return _fail(_fail_reason(ctx, path, missing, unexplained))
    reason = f"sign-off matches the current template ({path}, {len(items)} items)"
    if unchecked:
        count = len(unchecked)
        reason += (f"; the {count} unchecked item{'s' if count > 1 else ''} ({_list(unchecked, path, lines=False)}) "
                   f"{'are' if count > 1 else 'is'} explained in the additional detail section")
    else:
        reason += "; every item is checked"
    return CheckResult(NUMBER, NAME, Status.PASS, reason)


def _fail(reason: str) -> CheckResult:
    return CheckResult(NUMBER, NAME, Status.FAIL, reason)


def _template_items(items: tuple[signoff.ChecklistItem, ...]) -> list[_TemplateItem]:
    out: list[_TemplateItem] = []
    group = -1
    for item in items:
        if item.depth == 0 or group < 0:
            group += 1
        out.append(_TemplateItem(item, group, tuple(_normalize(item.text).split())))
    return out


def _normalize(text: str) -> str:
    """Lower-case words of `text`, links read as their text and URLs dropped (a URL holds "http")."""
    text = markdown.unlink(text)
    if "http" in text:
        text = _URL.sub(" ", text)
    return " ".join(_WORD.findall(text.lower()))


def _words(text: str, vocabulary: list[str], known: frozenset[str], typos: dict[str, str]) -> tuple[str, ...]:
    """Normalized words of a sign-off item, typos mapped to the closest template word (cached in `typos`);
    `known` is the set of `vocabulary`."""
    out = []
    for word in _normalize(text).split():
        if word not in known and word not in typos and len(typos) < MAX_CANONICAL_WORDS:
            typos[word] = (difflib.get_close_matches(word, vocabulary, 1, TYPO_CUTOFF) or [word])[0]
        out.append(word if word in known else typos.get(word, word))
    return tuple(out)


def _score(a: tuple[str, ...], b: tuple[str, ...], a_counts: Counter[str], b_counts: Counter[str]) -> float:
    """How alike two word sequences are (`a_counts`, `b_counts`: how often each word occurs in them)."""
    short, long_ = sorted((len(a), len(b)))
    if not short or short < COVER_MIN_LENGTH * long_:
        return 0.0  # neither measure can reach THRESHOLD
    if a == b:
        return 1.0
    # No more words can match than the two have in common.
    common = a_counts.keys() & b_counts.keys()
    shared = sum(map(min, map(a_counts.__getitem__, common), map(b_counts.__getitem__, common)))
    if max(2 * shared / (len(a) + len(b)), shared / short) < THRESHOLD:
        return 0.0  # neither measure can reach THRESHOLD
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    same = sum(block.size for block in matcher.get_matching_blocks())
    return max(2 * same / (len(a) + len(b)), same / short)


def _assign(items: list[_TemplateItem], signed: list[tuple[str, ...]]) -> dict[int, int]:
    """Template item line (in the template block) -> index of its sign-off item.

    A sign-off item only pairs with the template item(s) it resembles most, so a
    near-duplicate of one item (they share "Please link to GitHub Action ...")
    cannot stand in for a missing sibling; then one-to-one, best score first.
    """
    pairs: list[tuple[float, int, int]] = []
    counts = [Counter(t.words) for t in items]
    for si, words in enumerate(signed):
        mine = Counter(words)
        scores = [_score(t.words, words, c, mine) for t, c in zip(items, counts)]
        best = max(scores, default=0.0)
        if best >= THRESHOLD:
            pairs.extend((-best, ti, si) for ti, score in enumerate(scores) if score == best)
    pairs.sort()
    taken_t: set[int] = set()
    taken_s: set[int] = set()
    match: dict[int, int] = {}
    for _neg, ti, si in pairs:
        if ti in taken_t or si in taken_s:
            continue
        taken_t.add(ti)
        taken_s.add(si)
        match[items[ti].item.line] = si
    return match


def _stems(words: Iterable[str]) -> set[str]:
    return {w[:6] for w in words if len(w) >= 5 and w not in _STOPWORDS}


def _explained_groups(items: list[_TemplateItem], placeholder: str, detail: str) -> set[int]:
    """Groups the (filled-in) additional detail section mentions: by a stem no other group uses, or as the group a
    line describes best (`_best_described`)."""
    template_lines = {_normalize(line) for line in placeholder.splitlines()}
    filled = [n for n in (_normalize(line) for line in detail.splitlines()) if n and n not in template_lines]
    if not filled:
        return set()
    by_group: dict[int, set[str]] = {}
    for t in items:
        by_group.setdefault(t.group, set()).update(_stems(t.words))
    used_by = Counter(s for stems in by_group.values() for s in stems)
    said = [_stems(line.split()) for line in filled]
    mentioned = set().union(*said)
    explained = {group for group, stems in by_group.items() if any(used_by[s] == 1 for s in stems & mentioned)}
    weight = {s: math.log(len(by_group) / n) for s, n in used_by.items() if n <= len(by_group) / 2}
    totals = {group: sum(weight.get(s, 0.0) for s in group_stems) for group, group_stems in by_group.items()}
    for stems in said:
        explained |= _best_described(by_group, weight, totals, stems)
    return explained


def _best_described(by_group: dict[int, set[str]], weight: dict[str, float], totals: dict[int, float],
                    stems: set[str]) -> set[int]:
    """The group(s) one detail line describes best: the highest share of a group's stem weight it mentions.

    A stem weighs log(groups / groups using it), and only stems used by at most half the groups weigh anything
    (a word most items share, like "verified", says nothing about which one a line means). The share is the
    line's weight over the group's total (`totals`), so an item whose every word recurs in longer items
    ("passes evals", also in the architecture item) is still the one "evals: not run" is about.
    """
    scores: dict[int, float] = {}
    for group, group_stems in by_group.items():
        said = sum(weight.get(s, 0.0) for s in group_stems & stems)
        if said > 0:
            scores[group] = round(said / totals[group], 9)
    best = max(scores.values(), default=0.0)
    return {group for group, score in scores.items() if score == best}


def _short(item: _TemplateItem, limit: int = 60) -> str:
    text = " ".join(_URL.sub(" ", markdown.unlink(item.item.text)).replace("*", "").replace("`", "").split())
    if len(text) <= limit:
        return text
    return text[:limit].rsplit(" ", 1)[0].rstrip(",.;:") + "…"


def _list(items: list[_TemplateItem], path: str, lines: bool = True) -> str:
    shown = ", ".join(f"“{_short(t)}”" + (f" ({path}:{t.item.line})" if lines else "") for t in items[:_SHOWN])
    return shown + (f" (+{len(items) - _SHOWN} more)" if len(items) > _SHOWN else "")


def _fail_reason(ctx: Context, path: str, missing: list[_TemplateItem], unexplained: list[_TemplateItem]) -> str:
    parts = []
    if missing:
        n = len(missing)
        parts.append(f"sign-off lacks {n} current-template item{'s' if n > 1 else ''}: {_list(missing, path)}")
    if unexplained:
        n = len(unexplained)
        parts.append(f"{n} item{'s' if n > 1 else ''} left unchecked without an explanation in the additional "
                     f"detail section: {_list(unexplained, path)}")
    url = f"https://github.com/{ctx.snap.repo}/blob/{ctx.snap.pr.base_ref}/{path}"
    fix = f"re-post the sign-off from the current template {url}" if missing else \
        "check them or explain why in the additional detail section"
    return "; ".join(parts) + f"; {fix}"
