"""The sign-off's whole reading says what its opening says: `signoff._opens_in`, where it can tell, gives
`signoff.opens_with`, and `signoff.find`, which reads the newest candidate whole first, finds the sign-off
that the newest of all comments passing `is_signoff` is."""

from __future__ import annotations

from hypothesis import example, given, settings
from hypothesis import strategies as st

from checks.facts import markdown, signoff
from checks.snapshot import Comment

PHRASE = "As a PR reviewer and CODEOWNER"
_PIECES = [PHRASE, PHRASE + ", I have reviewed this and have:", "- [x] item", "- [ ] item", "> ", "    ", "   ",
           "\t", " ", "", "\n", "\n", "\n\n", "\r\n", "\r", "===", "---", "| a | b |", "|---|---|", "```", "~~~",
           "<!--", "-->", "<div>", "[a]: /u", "# h", "1. x", "* y", "text", "\u00a0", "\x0b", "***"]
_LONG = ["x" * 1500, "- [x] " + "y" * 700 + "\n", "\n" + "z " * 400]  # openings cut at OPENING_CHARS
bodies = st.lists(st.sampled_from(_PIECES) | st.sampled_from(_LONG), max_size=24).map("".join)
openings = st.tuples(st.sampled_from(["", " ", "   ", "    ", "\n", "\n\n", " \n\t\n", "\r\n", "\u00a0\n", "\t"]),
                     bodies).map(lambda p: p[0] + PHRASE + p[1])


def _comment(n: int, body: str, created: str) -> Comment:
    return Comment(id=n, kind="issue_comment", author=f"u{n}", author_association="MEMBER", body=body,
                   created_at=created, updated_at=created)


@settings(max_examples=3000, deadline=None)
@given(openings)
@example(PHRASE + "\nfoo\n===\n\nrest")
@example("[a]: /u\n\n" + PHRASE)
@example(PHRASE + "\n| a |\n|---|\n\n- [x] item")
@example("    " + PHRASE + "\n\n" + PHRASE)
@example(PHRASE + "\n- [x] item" * 500 + "\n\nrest")
@example(PHRASE + "\n" + "words\n" * 700 + "===")
@example(PHRASE + "\n" + "words\n" * 680 + "| a |\n|---|")
def test_the_whole_reading_tells_what_the_opening_tells(body):
    told = signoff._opens_in(markdown.read(body, signoff.SIGNOFF_CHARS), body, PHRASE)
    if told is not None:
        assert told == signoff.opens_with(body, PHRASE)


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(openings | bodies, st.sampled_from(["2026-09-01", "2026-09-02", "2026-09-03"])),
                max_size=4))
def test_find_is_the_newest_comment_that_is_a_sign_off(specs):
    comments = tuple(_comment(n, body, created) for n, (body, created) in enumerate(specs))
    signs = [c for c in comments if signoff.is_signoff(c, PHRASE)]
    newest = max(signs, key=lambda c: (c.created_at, c.id)) if signs else None
    assert signoff.find(comments, PHRASE) == (signoff.parse(newest) if newest else None)
