"""Check 5 — the sign-off uses the latest checklist template (checks/rules/check05_checklist.py)."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
import yaml

from checks.context import Context
from checks.facts.signoff import SIGNOFF_CHARS
from checks.registry import rules_of
from checks.result import Status
from checks.rules import check05_checklist
from tests.builders import REPO, SIGNOFF_HEAD, comment, ctx
from tests.conftest import world_params

PATH = "docs/PR_REVIEW_CHECKLIST.md"
URL = f"https://github.com/{REPO}/blob/main/{PATH}"

ITEMS = [
    "Verified that as of the moment of typing this, this is the latest version of "
    "[PR_REVIEW_CHECKLIST.md](https://github.com/o/r/blob/main/docs/PR_REVIEW_CHECKLIST.md)",
    "Verified that this PR has passed PR validation. Please link to GitHub Action workflow that shows this.",
    "Verified that this PR passes evals.  Please link to GitHub Action workflow that shows this.",
    "Verified that speculative decoding PRs uses chat templates to align the AL distribution to real world",
    "For agentic workloads: verified that speculative-decoding configs run with simulated synthetic acceptance, "
    "with the acceptance-length value taken from the committed golden AL curve.",
    "Verified that every single-node vLLM/SGLang recipe in this PR is documented in the official "
    "[vLLM recipes](https://recipes.vllm.ai/):",
    "  I linked the corresponding upstream PR in the [vLLM recipe repo](https://github.com/vllm-project/recipes) "
    "and verified that it is **MERGED** before this InferenceX PR merges.",
    "If any of the above criteria cannot reasonably be satisfied, I have provided additional reasoning below.",
]


def item_line(text: str, mark: str = " ") -> str:
    indent = "  " if text.startswith("  ") else ""
    return f"{indent}- [{mark}] {text.strip()}"


TEMPLATE_BODY = "\n".join([SIGNOFF_HEAD, *(item_line(t) for t in ITEMS), "", "### Additional detail section:",
                           "- insert any additional info here", "", "Signed: `FILL_IN_GITHUB_USERNAME`"])
TEMPLATE = f"""# PR Review Checklist

When a CODEOWNER reviews, fill in the form below.

## Template
```
{TEMPLATE_BODY}
```

## Example

- [ ] not a template item
"""
FIRST_ITEM_LINE = 8  # line of ITEMS[0] in TEMPLATE


def signoff(marks: dict[int, str] | None = None, detail: str = "- insert any additional info here",
            items: list[str] | None = None) -> str:
    texts = ITEMS if items is None else items
    marks = marks or {}
    lines = [item_line(t, marks.get(i, "x")) for i, t in enumerate(texts)]
    return "\n".join([SIGNOFF_HEAD, *lines, "", "### Additional detail section:", detail, "", "Signed: `me`"])


def make(body: str, template: str | None = TEMPLATE, **kw) -> Context:
    policy = {PATH: template} if template is not None else {}
    return ctx(comments=[comment(body)], policy=policy, **kw)


def run(body: str, **kw):
    return check05_checklist.check(make(body, **kw))


def test_every_item_checked_passes():
    r = run(signoff())
    assert r.status is Status.PASS
    assert r.reason == f"sign-off matches the current template ({PATH}, 8 items); every item is checked"
    assert (r.number, r.name) == (5, "latest checklist")


def test_missing_item_fails_naming_it_and_the_template():
    r = run(signoff(items=[t for i, t in enumerate(ITEMS) if i != 3]))
    assert r.status is Status.FAIL
    assert r.reason == (f"sign-off lacks 1 current-template item: “Verified that speculative decoding PRs uses chat "
                        f"templates…” ({PATH}:{FIRST_ITEM_LINE + 3}); re-post the sign-off from the current template "
                        f"{URL}")


def test_several_missing_items_are_counted():
    r = run(signoff(items=ITEMS[:2]))
    assert r.status is Status.FAIL
    assert r.reason.startswith("sign-off lacks 6 current-template items: ")
    assert "(+3 more)" in r.reason


def test_unchecked_without_explanation_fails():
    r = run(signoff(marks={4: " "}))
    assert r.status is Status.FAIL
    assert r.reason == ("1 item left unchecked without an explanation in the additional detail section: “For agentic "
                        f"workloads: verified that speculative-decoding…” ({PATH}:{FIRST_ITEM_LINE + 4}); "
                        "check them or explain why in the additional detail section")


def test_unchecked_with_unrelated_detail_fails():
    r = run(signoff(marks={4: " "}, detail="- Image is the official upstream image; numbers look good."))
    assert r.status is Status.FAIL


def test_unchecked_explained_in_detail_passes():
    r = run(signoff(marks={4: " "}, detail="- The golden-AL item is not applicable: fixed-seq-len, not agentic."))
    assert r.status is Status.PASS
    assert r.reason == (f"sign-off matches the current template ({PATH}, 8 items); the 1 unchecked item (“For agentic "
                        "workloads: verified that speculative-decoding…”) is explained in the additional detail "
                        "section")


# The real template's overlap: every stem of the evals item recurs in other items ("passes"/"evals" in the
# architecture item, "Please link to GitHub Action workflow that shows this" in the validation item).
ARCH_ITEM = ("Verified that the model architecture isn't changed with benchmark hacks like --hf-overrides. FLOPs at "
             "lower precisions is fine, given that the config passes private evals.")
REAL_ITEMS = ITEMS[:3] + [ARCH_ITEM] + ITEMS[3:]
EVALS = 2


def real_run(marks: dict[int, str], detail: str):
    body = "\n".join([SIGNOFF_HEAD, *(item_line(t) for t in REAL_ITEMS), "", "### Additional detail section:",
                      "- insert any additional info here", "", "Signed: `FILL_IN_GITHUB_USERNAME`"])
    return run(signoff(marks, detail, items=REAL_ITEMS), template=TEMPLATE.replace(TEMPLATE_BODY, body))


def test_item_sharing_all_its_words_with_other_items_can_be_explained():
    r = real_run({EVALS: " "}, "- Evals: not applicable, a docs-only PR.")
    assert r.status is Status.PASS, r.reason
    assert "(“Verified that this PR passes evals. Please link to GitHub…”) is explained" in r.reason


def test_a_line_explains_the_item_it_describes_best_not_its_longer_neighbour():
    r = real_run({3: " "}, "- Evals: not applicable, a docs-only PR.")
    assert r.status is Status.FAIL  # the line is about the evals item, not the architecture item
    assert "left unchecked without an explanation" in r.reason and "model architecture" in r.reason


def test_words_most_items_share_explain_nothing():
    r = real_run({EVALS: " "}, "- Verified that this PR is fine.")
    assert r.status is Status.FAIL


def test_unrelated_detail_does_not_explain_the_evals_item():
    r = real_run({EVALS: " "}, "- Image is the official upstream image; numbers look good.")
    assert r.status is Status.FAIL


@pytest.mark.parametrize("world", world_params())
def test_real_checklist_evals_item_can_be_explained(world: Path):
    """On every real checklist of the shared worlds: the evals item, unchecked, is explained by a line about it."""
    path = world / "trees" / "base" / PATH
    if not path.exists():
        pytest.skip("no checklist in this world's base tree")
    template = path.read_text(encoding="utf-8")
    items = [i.text for i in check05_checklist.signoff.template(template).items]
    evals = [n for n, text in enumerate(items) if "passes evals" in text]
    if not evals:
        pytest.skip("this checklist has no evals item")
    body = signoff({evals[0]: " "}, "- Evals: not run, this PR only changes the docs.", items=items)
    assert run(body, template=template).status is Status.PASS
    body = signoff({evals[0]: " "}, "- Image is the official upstream image.", items=items)
    assert run(body, template=template).status is Status.FAIL


def test_unchecked_sub_item_explained_through_its_group():
    detail = "**Single-node recipe publication — not applicable.** All recipes are multi-node srt-slurm recipes."
    r = run(signoff(marks={5: " ", 6: " "}, detail=detail))
    assert r.status is Status.PASS
    assert "the 2 unchecked items" in r.reason


def test_missing_and_unexplained_together():
    r = run(signoff(marks={1: " "}, items=[t for i, t in enumerate(ITEMS) if i != 2]))
    assert r.status is Status.FAIL
    assert r.reason.startswith("sign-off lacks 1 current-template item: “Verified that this PR passes evals")
    assert "; 1 item left unchecked without an explanation in the additional detail section: “Verified that this PR " \
           "has passed PR validation" in r.reason
    assert r.reason.endswith(f"re-post the sign-off from the current template {URL}")


def test_wording_drift_is_tolerated():
    drifted = [
        "verified that as of the moment of typing this, this is the **latest** version of PR_REVIEW_CHECKLIST.md",
        "Verified that this PR has passed PR validation. https://github.com/o/r/actions/runs/123",
        "Verified that this PR passes evals. Please link to GitHub Action workflow that shows this. "
        "https://github.com/o/r/actions/runs/123 (gsm8k 95.75%)",
        "Verifed that speculative decoding PRs use chat templates to align the AL distribution to real-world",
        "For agentic workloads: verified that speculative-decoding configs run with simulated synthetic acceptance, "
        "with the acceptance-length value taken from the committed [golden AL curve](https://x.example/golden).",
        "Verified that every single-node vLLM/SGLang recipe in this PR is documented in the official vLLM recipes:",
        "  I linked the corresponding upstream PR in the vLLM recipe repo and verified that it is MERGED before "
        "this InferenceX PR merges.",
        "If any of the above criteria cannot reasonably be satisfied, I have provided additional reasoning below.",
    ]
    r = run(signoff(items=drifted))
    assert r.status is Status.PASS, r.reason


def test_trimmed_instruction_text_still_matches():
    trimmed = list(ITEMS)
    trimmed[1] = "Verified that this PR has passed PR validation."
    trimmed[2] = "Verified that this PR passes evals."
    assert run(signoff(items=trimmed)).status is Status.PASS


def test_matching_is_one_to_one():
    duplicated = list(ITEMS)
    duplicated[2] = ITEMS[1]  # validation twice, evals missing
    r = run(signoff(items=duplicated))
    assert r.status is Status.FAIL
    assert r.reason.startswith("sign-off lacks 1 current-template item: “Verified that this PR passes evals. Please "
                               f"link to GitHub…” ({PATH}:{FIRST_ITEM_LINE + 2})")


def test_extra_signoff_items_are_ignored():
    r = run(signoff(items=ITEMS + ["Verified that the old, removed guideline still holds."], marks={8: " "}))
    assert r.status is Status.PASS


def test_unchecked_items_of_the_template_are_not_confused_with_example_items():
    assert "not a template item" not in run(signoff()).reason


def test_template_without_code_fence():
    template = TEMPLATE.replace("## Template\n```\n", "## Template\n\n").replace("\n```\n\n## Example", "\n\n## Example")
    r = run(signoff(items=ITEMS[:3]), template=template)
    assert r.status is Status.FAIL
    assert f"({PATH}:{FIRST_ITEM_LINE + 3})" in r.reason  # lines still point into the file


def test_headings_inside_the_fence_do_not_end_the_section():
    template = TEMPLATE.replace("### Additional detail section:", "## Additional detail section:")
    assert run(signoff(), template=template).status is Status.PASS


def test_missing_checklist_is_na():
    r = run(signoff(), template=None)
    assert r.status is Status.NA
    assert r.reason == f"{PATH} is not on the base branch: there is no checklist template to hold the sign-off to"


def test_no_template_heading_cannot_decide():
    r = run(signoff(), template="# Checklist\n\n- [ ] something\n")
    assert r.status is Status.UNDECIDED
    assert r.reason == (f"cannot decide: {PATH} has no \"Template\" heading, so the sign-off cannot be checked "
                        "against the template")


def test_template_without_items_cannot_decide():
    r = run(signoff(), template="## Template\n```\nAs a PR reviewer and CODEOWNER\n```\n")
    assert r.status is Status.UNDECIDED
    assert r.reason.startswith("cannot decide: ") and "has no checklist items" in r.reason


def test_no_signoff():
    r = check05_checklist.check(ctx(policy={PATH: TEMPLATE}))
    assert r.status is Status.FAIL
    assert r.reason.startswith("no sign-off found")


def test_signoff_without_items_fails():
    r = run(SIGNOFF_HEAD + "\nLGTM")
    assert r.status is Status.FAIL
    assert r.reason.startswith("sign-off lacks 8 current-template items")


def test_policy_checklist_path():
    policy = {".github/signoff-bot.yml": "checklist: docs/CHECKLIST.md\n", "docs/CHECKLIST.md": TEMPLATE}
    assert check05_checklist.check(ctx(comments=[comment(signoff())], policy=policy)).status is Status.PASS


def test_deterministic():
    body = signoff(marks={4: " ", 5: " "}, items=[t for i, t in enumerate(ITEMS) if i != 0])
    assert run(body) == run(body)


HUNG = 300  # seconds: a check still running by then hangs (a bound for a hang, not a speed)


def timed(body: str):
    """Check 5's result on `body` and the CPU seconds it took (the thread's own: the same on a busy machine)."""
    done = threading.Event()
    result = []

    def go():
        start = time.thread_time()
        verdict = run(body)
        result.append((verdict, time.thread_time() - start))
        done.set()

    threading.Thread(target=go, daemon=True).start()
    assert done.wait(HUNG), f"check 5 did not finish on a sign-off of {len(body):,} characters"
    return result[0]


def noise(chars: int) -> list[str]:
    """Checklist items no template has, about `chars` characters of them."""
    lines, total = [], 0
    while total < chars:
        lines.append(f"Verified item number {len(lines)} with words alpha{len(lines)} beta gamma delta epsilon")
        total += len(item_line(lines[-1], "x")) + 1
    return lines


def longest() -> str:
    """A passing sign-off as long as GitHub allows a comment to be."""
    return signoff(items=noise(SIGNOFF_CHARS - len(signoff()) - 200) + ITEMS)


def test_a_sign_off_as_long_as_github_allows_is_read_whole_and_fast():
    """Read in time linear in its length: 8 times the text costs about 8 times the CPU (quadratic: 64)."""
    body, eighth = longest(), signoff(items=noise(SIGNOFF_CHARS // 8 - len(signoff()) - 200) + ITEMS)
    assert SIGNOFF_CHARS - 1_000 < len(body) <= SIGNOFF_CHARS
    (result, cpu), (small, cpu_small) = timed(body), timed(eighth)
    assert result.status is Status.PASS and small.status is Status.PASS
    assert cpu < 24 * cpu_small, f"{cpu:.3f} s of CPU for {len(body):,} characters, {cpu_small:.3f} s for {len(eighth):,}"


def test_a_body_of_megabytes_is_read_only_as_far_as_a_comment_can_be_long():
    """GitHub refuses a comment body over 65,536 characters: what lies past that cannot be a checklist item;
    2 MB cost about what the longest comment does (read whole: 30 times that)."""
    r, cpu = timed(signoff(items=noise(2_000_000) + ITEMS))
    assert r.status is Status.FAIL and r.reason.startswith("sign-off lacks 8 current-template items")
    _, cpu_longest = timed(longest())
    assert cpu < 4 * cpu_longest, f"{cpu:.3f} s of CPU for 2 MB, {cpu_longest:.3f} s for the longest comment"


# --- shared worlds ------------------------------------------------------------------


@pytest.mark.parametrize("world", world_params())
def test_world(world: Path):
    from app.offline.snapshot import snapshot_from_world
    from app.offline.world import World

    expected = yaml.safe_load((world / "expected.yaml").read_text(encoding="utf-8")) or {}
    want = (expected.get("checks") or {}).get(check05_checklist.NUMBER)
    if want is None:
        pytest.skip("check 5 not asserted in this world")
    snap = snapshot_from_world(World.load(world), rules=rules_of(check05_checklist))
    result = check05_checklist.check(Context(snap))
    assert result.status.value == want, result.reason
