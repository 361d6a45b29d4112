"""Engine-patch waivers (`docs/waiver/<PR>.md`): when one is filled out, and whether the sign-off links it.

A waiver is filled out when it has no template placeholders (`<PR_NUMBER>`,
`<describe ...>`, TODO, TBD, FIXME, `[fill in]`); a "what is patched", a
"why" and a "removal plan" section, each a markdown heading (or a bold
lead-in line) followed by at least 40 characters of text; a link to an
upstream pull request or issue (a GitHub PR/issue in another repository);
and, for every file with patching, that file's name or the name of the
patcher script it runs. The sign-off links it with a GitHub URL of this
repository (or the PR's head repository) ending in the waiver's path.
"""

from __future__ import annotations

import re

from checks.context import Context

MIN_SECTION_CHARS = 40
_PLACEHOLDER = re.compile(r"<[A-Z][A-Z0-9_ -]*>|<[a-z][^<>\n]*\s[^<>\n]*>|\bTODO\b|\bTBD\b|\bFIXME\b"
                          r"|\[fill[^\]]*\]", re.I)
_HEADING = re.compile(r"^(?:#{1,6}\s+(.+?)\s*#*\s*$|\*\*(.+?)\*\*:?\s*$)")
_SECTIONS = (
    ("what is patched", re.compile(r"\bwhat\b.*\b(?:patch|change|modif)|^(?:patch(?:es|ed)?|changes)\b", re.I)),
    ("why the unmodified image cannot run it", re.compile(r"\bwhy\b|\breason|\brationale|\bjustification", re.I)),
    ("removal plan", re.compile(r"\bremov|\bretire|\bsunset|\bexit plan", re.I)),
)
_ISSUE_LINK = re.compile(r"https?://github\.com/([\w.-]+/[\w.-]+)/(?:pull|issues)/\d+")
_REPO_FILE = re.compile(r"https?://(?:github\.com/([^/\s]+/[^/\s]+)/(?:blob|tree|raw)/|"
                        r"raw\.githubusercontent\.com/([^/\s]+/[^/\s]+)/)([^?#\s]+)")


def _without_html_comments(text: str) -> str:
    """`text` without its `<!-- ... -->` comments (an unclosed one runs to the end, as before: it matched
    nothing, so it was kept)."""
    out: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0:
        end = text.find("-->", start + 4)
        if end < 0:
            break
        out.append(text[at:start])
        at = end + 3
    out.append(text[at:])
    return "".join(out)


def incomplete(ctx: Context, text: str, covers: tuple[tuple[str, ...], ...]) -> list[str]:
    """What a waiver lacks to count as filled out (empty when it is complete); `covers` lists, per file with
    patching, the names of which the waiver must mention one."""
    text = _without_html_comments(text)
    problems: list[str] = []
    placeholder = _PLACEHOLDER.search(text)
    if placeholder:
        problems.append(f"template placeholder {placeholder.group(0)!r} left in")
    sections = _sections(text)
    for label, pattern in _SECTIONS:
        bodies = [body for heading, body in sections if pattern.search(heading)]
        if not bodies:
            problems.append(f"no '{label}' section")
        elif max(len(re.sub(r"\s", "", _PLACEHOLDER.sub("", b))) for b in bodies) < MIN_SECTION_CHARS:
            problems.append(f"'{label}' section is empty")
    repo = ctx.snap.repo.lower()
    if not any(m.group(1).lower() != repo for m in _ISSUE_LINK.finditer(text)):
        problems.append("no upstream PR/issue link")
    for names in covers:
        if not any(name in text for name in names):
            problems.append(f"does not name {' or '.join(names)}")
    return problems


def _sections(text: str) -> list[tuple[str, str]]:
    out: list[tuple[str, list[str]]] = []
    for line in text.splitlines():
        m = _HEADING.match(line.strip())
        if m:
            out.append((m.group(1) or m.group(2), []))
        elif out:
            out[-1][1].append(line)
    return [(h, "\n".join(body)) for h, body in out]


def linked(ctx: Context, waiver: str) -> bool:
    """Whether the sign-off's additional detail section links `waiver` (a repository path)."""
    if ctx.signoff is None:
        return False
    repos = {ctx.snap.repo.lower(), (ctx.snap.pr.head_repo or ctx.snap.repo).lower()}
    for url in ctx.signoff.detail_links:
        m = _REPO_FILE.match(url)
        if m and (m.group(1) or m.group(2)).lower() in repos:
            rest = m.group(3)
            if rest == waiver or rest.endswith("/" + waiver):
                return True
    return False
