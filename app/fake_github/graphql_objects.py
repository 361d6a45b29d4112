"""The GraphQL side of the fake's conversation objects, in GitHub's GraphQL shapes.

`IssueComment`, `PullRequestReview` and `PullRequestReviewComment` implement
`Node`, `Comment` and `UserContentEditable`: `body`, `author`, `createdAt`,
`lastEditedAt` (null until edited), `editor` (who made the last edit),
`includesCreatedEdit` and `userContentEdits(first:|last:)`, whose
`UserContentEdit` nodes carry `editedAt`, `editor` and `diff`, newest first.
As on GitHub, the first edit of a comment also records its creation (edited
by its author, at its creation time). Actors are `User` or `Bot`; a bot's
GraphQL `login` has no `[bot]` suffix. World comments may say `edited_at`
and `last_editor` (null: an account since deleted, whom GitHub no longer names).
"""

from __future__ import annotations

import base64
import binascii
import re
from typing import Any

from app.offline.snapshot import comment_url

from .graphql import NotFound, Obj, QueryError
from .ids import node_id, stable_id
from .payloads import HTML, user_type
from .state import GitHubState, RepoState

MAX_PAGE = 100
_NODE = re.compile(r"^0\d+:(?P<type>[A-Za-z]+)(?P<number>\d+)$")
_TABLES = {"IssueComment": "issue_comments", "PullRequestReview": "reviews",
           "PullRequestReviewComment": "review_comments"}
_KINDS = {"IssueComment": "issue_comment", "PullRequestReview": "review", "PullRequestReviewComment": "review_comment"}
_COMMENT_INTERFACES = ("Node", "Comment", "UserContentEditable", "Reactable", "Updatable", "Deletable")


def created_of(kind: str, item: dict[str, Any], epoch: str) -> str:
    return str(item.get("submitted_at" if kind == "PullRequestReview" else "created_at") or epoch)


def edits_of(kind: str, item: dict[str, Any], epoch: str) -> list[dict[str, Any]]:
    """The comment's edit history, oldest first: GitHub's records, or those a world's fields imply."""
    if "edits" in item:
        return item["edits"]
    if not item.get("edited_at"):
        return []
    created = created_of(kind, item, epoch)
    return [{"id": stable_id("edit", f"{kind}:{item['id']}:created"), "editor": item["user"], "edited_at": created,
             "diff": None},
            {"id": stable_id("edit", f"{kind}:{item['id']}:last"), "editor": item.get("last_editor"),
             "edited_at": str(item["edited_at"]), "diff": item.get("body") or ""}]


def edit_body(state: GitHubState, kind: str, item: dict[str, Any], editor: str, body: str) -> str:
    """Replace `item`'s body as `editor` (GitHub keeps the history); returns the body it had before."""
    previous = item.get("body") or ""
    now = state.clock.tick()
    history = edits_of(kind, item, state.epoch) or [
        {"id": state.next_id(), "editor": item["user"], "edited_at": created_of(kind, item, state.epoch),
         "diff": previous}]
    item["edits"] = [*history, {"id": state.next_id(), "editor": editor, "edited_at": now, "diff": body}]
    item.update(body=body, updated_at=now, edited_at=now, last_editor=editor)
    return previous


def query_root(state: GitHubState, api: str) -> Obj:
    """The `Query` type: `node(id:)` and `nodes(ids:)` over the fake's comments."""
    def nodes(args: dict[str, Any]) -> list[Any]:
        ids = args.get("ids")
        if not isinstance(ids, list) or len(ids) > MAX_PAGE:
            raise QueryError(f"ids must be a list of at most {MAX_PAGE} ids", "argumentLiteralsIncompatible")
        return [_node(state, api, i) for i in ids]

    return Obj("Query", {"node": lambda args: _node(state, api, args.get("id")), "nodes": nodes})


def _node(state: GitHubState, api: str, gid: Any) -> Obj | NotFound:
    missing = NotFound(f"Could not resolve to a node with the global id of '{gid}'")
    if not isinstance(gid, str):
        return missing
    try:
        m = _NODE.match(base64.b64decode(gid + "=" * (-len(gid) % 4), validate=True).decode())
    except (binascii.Error, UnicodeDecodeError):
        return missing
    if m is None or m["type"] not in _TABLES:
        return missing
    number = int(m["number"])
    for repo in state.repos.values():
        item = getattr(repo, _TABLES[m["type"]]).get(number)
        if item is not None:
            return _comment(state, api, repo, m["type"], item)
    return missing


def _actor(state: GitHubState, login: str | None) -> Obj | None:
    if login is None:
        return None
    bot = user_type(state, login) == "Bot"
    name = login.removesuffix("[bot]") if bot else login
    url = f"{HTML}/apps/{name}" if bot else f"{HTML}/{login}"
    return Obj("Bot" if bot else "User", {"login": lambda _a: name, "url": lambda _a: url}, ("Node", "Actor"))


def _comment(state: GitHubState, api: str, repo: RepoState, kind: str, item: dict[str, Any]) -> Obj:
    created = created_of(kind, item, state.epoch)
    edits = edits_of(kind, item, state.epoch)
    last = edits[-1] if edits else None
    number = int(item["id"])
    fields = {
        "id": lambda _a: node_id(kind, number),
        "databaseId": lambda _a: number,
        "body": lambda _a: item.get("body") or "",
        "createdAt": lambda _a: created,
        "updatedAt": lambda _a: str(item.get("updated_at") or created),
        "lastEditedAt": lambda _a: last["edited_at"] if last else None,
        "includesCreatedEdit": lambda _a: bool(edits),
        "author": lambda _a: _actor(state, item["user"]),
        "editor": lambda _a: _actor(state, last["editor"]) if last else None,
        "authorAssociation": lambda _a: item.get("author_association", "NONE"),
        "url": lambda _a: comment_url(repo.full_name, item["number"], _KINDS[kind], number),
        "userContentEdits": lambda args: _edits(state, list(reversed(edits)), args),
    }
    return Obj(kind, fields, _COMMENT_INTERFACES)


def _edits(state: GitHubState, newest_first: list[dict[str, Any]], args: dict[str, Any]) -> Obj:
    first, last = args.get("first"), args.get("last")
    if args.get("after") is not None or args.get("before") is not None:
        raise QueryError("cursors are not served by the fake", "unsupported")
    if (first is None) == (last is None) or not isinstance(first or last, int) or not 0 <= (first or last) <= MAX_PAGE:
        raise QueryError(f"You must provide a `first` or `last` value (at most {MAX_PAGE}) to properly paginate "
                         "the `userContentEdits` connection.", "argumentLiteralsIncompatible")
    page = newest_first[:first] if first is not None else newest_first[len(newest_first) - last:]
    nodes = [_edit(state, e) for e in page]
    more_after = first is not None and len(newest_first) > first
    more_before = last is not None and len(newest_first) > last
    cursors = [base64.b64encode(f"cursor:{n}".encode()).decode() for n in range(len(page))]
    page_info = Obj("PageInfo", {
        "hasNextPage": lambda _a: more_after, "hasPreviousPage": lambda _a: more_before,
        "startCursor": lambda _a: cursors[0] if cursors else None,
        "endCursor": lambda _a: cursors[-1] if cursors else None})
    edges = [Obj("UserContentEditEdge", {"node": lambda _a, n=n: n, "cursor": lambda _a, c=c: c})
             for n, c in zip(nodes, cursors)]
    return Obj("UserContentEditConnection", {
        "totalCount": lambda _a: len(newest_first), "nodes": lambda _a: nodes, "edges": lambda _a: edges,
        "pageInfo": lambda _a: page_info})


def _edit(state: GitHubState, e: dict[str, Any]) -> Obj:
    return Obj("UserContentEdit", {
        "id": lambda _a: node_id("UserContentEdit", int(e["id"])),
        "editedAt": lambda _a: e["edited_at"], "createdAt": lambda _a: e["edited_at"],
        "updatedAt": lambda _a: e["edited_at"], "deletedAt": lambda _a: None, "deletedBy": lambda _a: None,
        "editor": lambda _a: _actor(state, e["editor"]), "diff": lambda _a: e.get("diff")}, ("Node",))
