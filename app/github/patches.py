"""GitHub's per-file `patch` (unified hunks without file headers): reversing it, and its commentable lines."""

from __future__ import annotations

import re

_HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")


def base_from_patch(head_text: str, patch: str | None) -> str | None:
    """The base text, rebuilt from the head text and a complete patch; None when that is not certain.

    Every hunk's head side must match the head text exactly, and end-of-file
    newline markers must be unambiguous; otherwise the caller fetches the base.
    """
    if not patch or not head_text:
        return None
    head = head_text.split("\n")
    head_ends_nl = head_text.endswith("\n")
    if head_ends_nl:
        head = head[:-1]
    out: list[str] = []
    pos = 0  # next unconsumed head line (0-based)
    marker_old = marker_new = False  # "\\ No newline at end of file" after a base-side / head-only line
    last_side = ""
    hunks = 0
    lines = patch.split("\n")
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        if not m:
            return None
        hunks += 1
        new_start = int(m.group(3))
        new_len = int(m.group(4)) if m.group(4) is not None else 1
        old_len = int(m.group(2)) if m.group(2) is not None else 1
        start = new_start - 1 if new_len else new_start
        if start < pos or start > len(head):
            return None
        out.extend(head[pos:start])
        pos = start
        i += 1
        seen_old = seen_new = 0
        while i < len(lines) and not lines[i].startswith("@@"):
            line = lines[i]
            tag, text = line[:1], line[1:]
            if tag == " ":
                if pos >= len(head) or head[pos] != text:
                    return None
                out.append(text)
                pos += 1
                seen_old += 1
                seen_new += 1
                last_side = "both"
            elif tag == "-":
                out.append(text)
                seen_old += 1
                last_side = "old"
            elif tag == "+":
                if pos >= len(head) or head[pos] != text:
                    return None
                pos += 1
                seen_new += 1
                last_side = "new"
            elif line.startswith("\\"):
                marker_old = marker_old or last_side in ("old", "both")
                marker_new = marker_new or last_side == "new"
            elif line == "" and i == len(lines) - 1:
                pass  # trailing newline of the patch text itself
            else:
                return None
            i += 1
        if seen_old != old_len or seen_new != new_len:
            return None
    if hunks == 0:
        return None
    reached_end = pos == len(head)
    out.extend(head[pos:])
    base_ends_nl = head_ends_nl or (marker_new and reached_end)
    if marker_old:
        base_ends_nl = False
    return "\n".join(out) + ("\n" if base_ends_nl and out else "")


def commentable_lines(patch: str | None) -> set[int]:
    """Head-side line numbers inside the patch's hunks: where GitHub accepts an inline review comment."""
    lines: set[int] = set()
    if not patch:
        return lines
    new_line = 0
    for raw in patch.split("\n"):
        m = _HUNK.match(raw)
        if m:
            new_line = int(m.group(3))
            continue
        if raw.startswith("+") or raw.startswith(" "):
            lines.add(new_line)
            new_line += 1
    return lines
