"""Whether the sign-off stands: its author's own words, given on the content the PR has now.

## What it enforces

Two rules beyond checks 0-12. Both are pure; the app gathers their facts (GitHub's
edit history of the comment, what this App recorded when it verified before),
calls them and posts what they decide.

Own words (the "Signer's own words" row, a rule of `checks.registry`): a
sign-off counts only as its author's own words (`signoff.not_own_words`).

Freshness: a sign-off vouches for the content it was first verified on: the
PR's effective diff (`content`).

## Why

On GitHub anyone with write access may edit another user's comment, so a
sign-off's words are its author's only when its author last edited it. And a
sign-off vouches for what the reviewer saw: a push that changes the PR's
effective diff after it was given changes what it would vouch for.

## How it decides

Own words: a sign-off last edited by anyone else, or whose last editor GitHub
would not tell, gets a FAIL row naming the editor: the verdict is REJECTED and
says why. Such a sign-off vouches for no content, so its freshness is not asked
(`decide` says "disowned").

Freshness (decided by `checks.facts.freshness`, which the app calls): the first verification is recorded twice: in the App's database
(the local pin) and, with every other pin of the PR, in every sign-off check
run the App posts from then on (`Record`, hidden in the run's summary; only
this App can write its check runs, so the record survives the loss of the
database). Then:

0. a sign-off that is not its author's own words vouches for nothing
   ("disowned"): its REJECTED verdict is published, and nothing is pinned;
1. every record of this sign-off must name the same content; when the local
   pin and GitHub's records disagree, which content it vouches for is unknown;
2. a recorded sign-off is fresh when the content is unchanged, stale otherwise;
3. an unrecorded sign-off is verified for the first time, and vouches for the
   content now, unless a record shows that the App read the PR after this
   sign-off was given (the newest thing that verification saw is later than
   the sign-off): then this one was not pinned when it should have been (it
   was not the one judged, or the record is lost), so which content it
   vouches for is unknown.

Stale and unknown fail closed alike: the check run asks for a fresh sign-off
(`action_required`) until a CODEOWNER posts one or edits theirs.

## Passing example

    own words: a sign-off last edited by its author (the author's own edit is a fresh sign-off)
    fresh:     signed off at head A, a push with the same diff (a rebase, a reworded commit)

## Failing example

    own words: a sign-off last edited by another user with write access, or by an editor GitHub will not name
    stale:     signed off at head A, a push that changes a config; or the same after the database was lost
    unknown:   a verification read the PR after this sign-off was given, yet no record pins it
"""

from __future__ import annotations

from checks.context import Context
from checks.facts import signoff
from checks.result import CheckResult, Status

OWN_WORDS_NUMBER = 15
OWN_WORDS_NAME = "Signer's own words"


# --- own words ---------------------------------------------------------------------------------


def check(ctx: Context) -> CheckResult | None:
    """The "Signer's own words" row (15) of the verdict, shown only when it fails."""
    return own_words(ctx.signoff)


def own_words(sign: signoff.SignOff | None) -> CheckResult | None:
    """A FAIL row when the sign-off is not its author's own words; None when it is (or there is none)."""
    problem = signoff.not_own_words(sign.comment) if sign is not None else None
    if problem is None:
        return None
    return CheckResult(OWN_WORDS_NUMBER, OWN_WORDS_NAME, Status.FAIL, problem)
