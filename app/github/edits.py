"""Who last edited a comment, from GitHub's GraphQL API (the REST API does not say).

On GitHub anyone with write access may edit another user's comment or review
summary, so who *wrote* a sign-off is its author only if nobody else edited it
since. GraphQL tells, per comment: `lastEditedAt` (null when never edited),
`editor`, and the edit history (`userContentEdits`). The last editor is the
author of the newest edit by `editedAt` (whatever order GitHub lists them in),
and `editor` must agree with it. The comment's body is read in the same query
and must be the one gathered through REST: else it changed meanwhile
(`changed`; a sign-off is then read again later). When GitHub will not say
(the node is gone, the history is longer than one page, an editor's account
was deleted, the answers disagree, GraphQL answered with errors), the last
editor is unknown (None) and the sign-off cannot count.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from githubkit import GitHub
from githubkit.exception import GraphQLFailed

from .client import as_github_error

HISTORY = 100  # edits read per comment (GitHub's page size); a longer history is not trusted
BATCH = 100  # node ids per query (GitHub's limit for `nodes`)
QUERY = """
query($ids: [ID!]!) {
  nodes(ids: $ids) {
    __typename
    id
    ... on Comment {
      body
      lastEditedAt
      editor { __typename login }
      userContentEdits(first: %d) {
        totalCount
        nodes { editedAt editor { __typename login } }
      }
    }
  }
}
""" % HISTORY


@dataclass(frozen=True)
class LastEdit:
    """Who last edited a comment's body ("" when nobody did, None when GitHub would not say), and when;
    `changed`: the body GraphQL read is not the one gathered (an edit landed between the two reads)."""

    editor: str | None
    at: str = ""
    changed: bool = False


UNKNOWN = LastEdit(None)


async def last_edits(gh: GitHub, bodies: dict[str, str]) -> dict[str, LastEdit]:
    """The last edit of each comment, by node id; `bodies` are the comments' bodies as gathered."""
    ids = sorted(bodies)
    if not ids:
        return {}
    out: dict[str, LastEdit] = {}
    for start in range(0, len(ids), BATCH):
        batch = ids[start:start + BATCH]
        try:
            data = await gh.async_graphql(QUERY, {"ids": batch})
        except GraphQLFailed as exc:
            data = exc.response.data or {}  # GitHub's partial answer: unknown where it is null
        except Exception as exc:  # noqa: BLE001 - rate limits, timeouts, 5xx: tried again later
            raise as_github_error(exc, "comment edit history") from None
        nodes = data.get("nodes") if isinstance(data, dict) else None
        found = {n.get("id"): n for n in nodes or [] if isinstance(n, dict)}
        for gid in batch:
            out[gid] = _last_edit(found.get(gid), bodies[gid])
    return out


def _login(actor: Any) -> str | None:
    """An actor's login as REST spells it (a bot's with its `[bot]` suffix); None for a deleted account."""
    if not isinstance(actor, dict) or not isinstance(actor.get("login"), str):
        return None
    return actor["login"] + "[bot]" if actor.get("__typename") == "Bot" else actor["login"]


def _moment(text: Any) -> str | None:
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).astimezone(timezone.utc) \
            .strftime("%Y-%m-%dT%H:%M:%SZ")
    except ValueError:
        return None


def _last_edit(node: dict[str, Any] | None, body: str) -> LastEdit:
    if node is None:
        return UNKNOWN
    if node.get("body") != body:
        return LastEdit(None, changed=True)
    if node.get("lastEditedAt") is None:
        return LastEdit("")
    last = _moment(node["lastEditedAt"])
    history = node.get("userContentEdits") or {}
    edits = [e for e in history.get("nodes") or [] if isinstance(e, dict)]
    if not edits or history.get("totalCount", 0) > len(edits):
        return LastEdit(None, last or "")
    newest = max(edits, key=lambda e: _moment(e.get("editedAt")) or "")
    editor = _login(newest.get("editor"))
    if last is None or _moment(newest.get("editedAt")) != last or editor is None \
            or _login(node.get("editor")) != editor:
        return LastEdit(None, last or "")
    return LastEdit(editor, last)
