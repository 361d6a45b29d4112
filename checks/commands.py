"""Slash commands in PR conversation comments: `/reuse-sweep-run [run_id]` and the re-check trigger.

Rule: a command counts only at the start of a line (leading whitespace
allowed) of a conversation comment written by a user, not a bot. It is
authorized when the comment's `author_association` is OWNER, MEMBER or
COLLABORATOR, or when the app confirmed the author's repository permission
as write or above (association hides private org membership). The last
authorized command wins: newest comment, and within it the last line.

    counts:     "/reuse-sweep-run 31451666262"  by a COLLABORATOR
    counts:     "LGTM\\n/reuse-sweep-run"        (bare: reuse the newest green sweep)
    ignored:    "please run `/reuse-sweep-run`"  (not at the start of a line)
    ignored:    "/reuse-sweep-run"               by a CONTRIBUTOR without write permission
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from .signoff import is_bot
from .snapshot import Comment, Snapshot

WRITE_PERMISSIONS = ("admin", "maintain", "write")


@dataclass(frozen=True)
class Command:
    comment: Comment
    run_id: int | None  # the pinned run, None for a bare command
    argument: str  # the raw text after the command ("" when bare)
    authorized: bool

    @property
    def author(self) -> str:
        return self.comment.author


def command_pattern(name: str) -> re.Pattern:
    """`name` at the start of a line, with its optional argument in group `arg`."""
    return re.compile(rf"^[ \t]*{re.escape(name)}(?![\w-])[ \t]*(?P<arg>[^\s]*)", re.MULTILINE)


def is_authorized(comment: Comment, snap: Snapshot, associations: tuple[str, ...]) -> bool:
    if comment.author_association.upper() in associations:
        return True
    permission = snap.collaborators.get(comment.author) or snap.collaborators.get(comment.author.lower())
    return permission in WRITE_PERMISSIONS


def commands(snap: Snapshot, name: str, associations: tuple[str, ...], bot_login: str = "") -> list[Command]:
    """Every `name` command in conversation comments, oldest first (last line last)."""
    pattern = command_pattern(name)
    out: list[Command] = []
    for c in sorted(snap.comments, key=lambda c: (c.created_at, c.id)):
        if c.kind != "issue_comment" or is_bot(c, bot_login):
            continue
        for m in pattern.finditer(c.body.replace("\r\n", "\n")):
            arg = m.group("arg")
            run_id = int(arg) if arg.isdigit() else None
            out.append(Command(c, run_id, arg, is_authorized(c, snap, associations)))
    return out


def effective(cmds: list[Command]) -> Command | None:
    """The command in force: the last authorized one."""
    authorized = [c for c in cmds if c.authorized]
    return authorized[-1] if authorized else None
