"""Small snapshots for unit tests: a PR with sensible defaults, overridable piece by piece."""

from __future__ import annotations

import difflib
from dataclasses import replace

from checks.context import Context
from checks.evidence import Wanted
from checks.registry import rules_of
from checks.rule import run
from checks.result import CheckResult, Severity, Status
from checks.snapshot import ChangedFile, Comment, PullRequest, Snapshot, frozen_map

BASE = "b" * 40
HEAD = "h" * 40
REPO = "SemiAnalysisAI/InferenceX"

SIGNOFF_HEAD = "As a PR reviewer and CODEOWNER, I have reviewed this and have:"


def pr(**kw) -> PullRequest:
    fields = dict(number=100, title="Add a config", body="", author="contributor", author_association="CONTRIBUTOR",
                  state="open", draft=False, merged=False, base_ref="main", base_sha=BASE, head_ref="feature",
                  head_sha=HEAD, head_repo=REPO, url=f"https://github.com/{REPO}/pull/100")
    fields.update(kw)
    return PullRequest(**fields)


def changed(path: str, base: str | None, head: str | None, status: str | None = None,
            previous_path: str | None = None) -> ChangedFile:
    """A changed file with its unified patch computed from the two texts."""
    if status is None:
        status = "added" if base is None else "removed" if head is None else "modified"
    lines = list(difflib.unified_diff((base or "").splitlines(), (head or "").splitlines(), lineterm="", n=3))[2:]
    return ChangedFile(path, status, previous_path, "\n".join(lines) or None, base, head)


def comment(body: str, author: str = "reviewer", kind: str = "issue_comment", cid: int = 1,
            created_at: str = "2026-08-01T12:00:00Z", association: str = "COLLABORATOR", bot: bool = False) -> Comment:
    return Comment(id=cid, kind=kind, author=author, author_association=association, body=body,
                   created_at=created_at, url=f"https://github.com/{REPO}/pull/100#issuecomment-{cid}",
                   author_is_bot=bot)


def snapshot(**kw) -> Snapshot:
    """A snapshot; mapping fields may be given as plain dicts."""
    fields = dict(repo=REPO, pr=pr(), now="2026-08-01T12:00:00Z", files=(), commits=(HEAD,), comments=())
    for name in ("policy", "master_base", "master_head", "teams", "collaborators"):
        if name in kw and isinstance(kw[name], dict):
            kw[name] = frozen_map(kw[name])
    if "extra_files" in kw and isinstance(kw["extra_files"], dict):
        kw["extra_files"] = frozen_map({k: frozen_map(v) for k, v in kw["extra_files"].items()})
    for name in ("files", "comments", "commits", "check_runs", "workflow_runs", "artifacts", "upstream"):
        if name in kw:
            kw[name] = tuple(kw[name])
    fields.update(kw)
    return Snapshot(**fields)


def ctx(**kw) -> Context:
    return Context(snapshot(**kw))


def with_(snap: Snapshot, **kw) -> Snapshot:
    return replace(snap, **kw)


def needs(module, c: Context) -> Wanted:
    """What `module`'s rule(s) ask for beyond what `c`'s snapshot holds, when they run on it."""
    for rule in rules_of(module):
        run(rule, c)
    return c.missing


def decided(result: CheckResult, status: Status, *at: tuple[str, str, int], only: bool = False) -> CheckResult:
    """Assert a check's decision by what it decides, not by how it is worded: the row's status and, for each
    (rule id, path, line) of `at`, a finding there (with `only`, no other finding). A test asserts the wording
    only where the wording is the point (the fix a message gives, what it names, a count)."""
    assert result.status is status, result
    found = {(f.rule, f.path, f.line) for f in result.findings}
    assert set(at) <= found if not only else found == set(at), sorted(found)
    return result


def sound(module, c: Context) -> CheckResult:
    """`module.check(c)`, asserting what any of its results must be, whatever the input: the check's own
    row with a one-line reason (no fail-closed internal error), no error finding on a row that passes, an
    UNDECIDED row that says it cannot decide (and each of its undecided findings), a FAIL that rests on a
    decided finding when it has findings, every finding on a line of a file at head, and the same result
    from a fresh Context."""
    r = module.check(c)
    assert (r.number, r.name) == (module.NUMBER, module.NAME) and r.reason.strip(), r
    assert "\n" not in r.reason, r.reason
    assert "internal error" not in r.reason, r.reason
    assert not (r.passed and any(f.severity is Severity.ERROR for f in r.findings)), r
    for f in r.findings:
        assert not f.undecided or f.message.startswith("cannot decide"), f
    if r.status is Status.UNDECIDED:
        assert "cannot decide" in r.reason, r.reason
    if r.status is Status.FAIL and r.findings:
        assert any(not f.undecided for f in r.findings), r
    heads = {**{f.path: f.head_text for f in c.snap.files}, **c.snap.master_head}
    for f in r.findings:
        text = heads.get(f.path)
        assert text is not None, f"{f} is on no file at head"
        assert 1 <= f.line <= max(1, len(text.splitlines())), f"{f} is beyond the end of {f.path}"
    assert module.check(Context(c.snap)) == r
    return r
