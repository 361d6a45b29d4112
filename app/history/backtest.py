"""`signoff-bot backtest`: what the gate would have said on a repository's merged history.

Every squash-merged pull request on the default branch (a first-parent
commit whose subject ends in `(#N)`) is one row: its base is the first
parent, its head the commit itself (a merge commit's second parent), the
policy files are read from the base, and the review date is the merge date:
the snapshot the App would have built when the PR was verified, from the
local clone only. The conversation checks (0-5: sign-off, sweep, evals,
recipe link, reuse command, checklist) need what a git history does not
hold, so only the content checks 6-12 and recipe lint are reported.

A row is REJECTED when a content check FAILs (or lint, where it blocks),
UNDECIDED when none FAILs but one could not decide (the App would ask a
maintainer), else PASS; ERROR when its commits cannot be read. What a rule
could judge only with a sign-off, where the repository holds what the
sign-off would link, is the check's note, not a FAIL.
"""

from __future__ import annotations

import multiprocessing
import os
import re
import sys
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Callable, Iterator

from app.offline.snapshot import judge_world
from checks.result import CheckResult, Status, Verdict

from .gitrepo import Commits, Git, GitError, pull_world

CONTENT_CHECKS = tuple(range(6, 13))
NOT_BACKTESTED = ("checks 0-5 (CODEOWNER, sweep, evals, recipe link, reuse command, checklist) read the PR's "
                  "conversation and CI runs, which a git history does not hold: they are not backtested")
_PR_SUBJECT = re.compile(r"\(#(\d+)\)\s*$")
_DEFAULT_REFS = ("origin/HEAD", "HEAD", "main", "origin/main", "master", "origin/master")


@dataclass(frozen=True)
class MergedPR:
    number: int
    commit: str  # the commit on the default branch
    base: str  # its first parent
    head: str  # the merged content: the commit itself, or a merge commit's second parent
    title: str
    author: str
    merged_at: str  # ISO 8601, UTC

    @property
    def merged_on(self) -> date:
        return date.fromisoformat(self.merged_at[:10])


@dataclass
class Row:
    pr: MergedPR
    verdict: str  # PASS | REJECTED | UNDECIDED | ERROR
    checks: dict[int, CheckResult] = field(default_factory=dict)
    lint: CheckResult | None = None
    lint_blocking: bool = False
    error: str | None = None

    def to_json(self) -> dict:
        out: dict = {"number": self.pr.number, "commit": self.pr.commit, "title": self.pr.title,
                     "merged_at": self.pr.merged_at, "verdict": self.verdict}
        if self.error:
            out["error"] = self.error
        out["checks"] = {str(n): {"status": r.status.value, "reason": r.reason,
                                  **({"notes": list(r.notes)} if r.notes else {})} for n, r in self.checks.items()}
        if self.lint is not None:
            out["lint"] = {"status": self.lint.status.value, "blocking": self.lint_blocking,
                           "reason": self.lint.reason}
        return out

    @property
    def failing(self) -> list[CheckResult]:
        """The rows that reject the PR: failing content checks, and lint when it blocks."""
        return self._deciding(Status.FAIL)

    @property
    def undecided(self) -> list[CheckResult]:
        """The rows a maintainer would have been asked to confirm."""
        return self._deciding(Status.UNDECIDED)

    def _deciding(self, status: Status) -> list[CheckResult]:
        rows = [r for r in self.checks.values() if r.status is status]
        if self.lint is not None and self.lint_blocking and self.lint.status is status:
            rows.append(self.lint)
        return rows


def default_branch(git: Git) -> str:
    """The ref whose first-parent history is backtested: the clone's default branch."""
    for ref in _DEFAULT_REFS:
        if git.run("rev-parse", "--verify", "--quiet", f"{ref}^{{commit}}", check=False).returncode == 0:
            return ref
    raise GitError(f"{git.path} has no default branch (tried {', '.join(_DEFAULT_REFS)})")


def merged_prs(git: Git, ref: str, since: date | None = None, until: date | None = None) -> list[MergedPR]:
    """Squash-merged PRs on `ref`'s first-parent history, oldest first, merged within [since, until] (UTC)."""
    log = git.text("log", "--first-parent", "-z", "--format=%H%x1f%P%x1f%cI%x1f%an%x1f%s", ref)
    out = []
    for record in log.split("\0"):
        if not record.strip():
            continue
        sha, parents, committed, author, subject = record.strip("\n").split("\x1f", 4)
        m = _PR_SUBJECT.search(subject)
        parents_list = parents.split()
        if m is None or not parents_list:
            continue
        merged_at = datetime.fromisoformat(committed).astimezone(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        pr = MergedPR(int(m.group(1)), sha, parents_list[0], parents_list[1] if len(parents_list) > 1 else sha,
                      subject[:m.start()].rstrip(), author, merged_at)
        if (since and pr.merged_on < since) or (until and pr.merged_on > until):
            continue
        out.append(pr)
    out.reverse()
    return out


def repo_name(git: Git) -> str:
    """owner/name from the origin URL when it looks like GitHub's, else local/<directory>."""
    url = git.run("remote", "get-url", "origin", check=False).stdout.decode().strip()
    m = re.search(r"github\.com[:/]([^/]+)/([^/]+?)(?:\.git)?$", url)
    return f"{m.group(1)}/{m.group(2)}" if m else f"local/{git.path.resolve().name}"


def backtest_one(git: Git, commits: Commits, name: str, pr: MergedPR) -> Row:
    """One PR's row; an error reading its commits is the row's error, never the whole backtest's."""
    pull = {"number": pr.number, "title": pr.title, "user": pr.author, "author_association": "NONE",
            "state": "closed", "merged": True, "commits": [pr.head],
            "base": {"ref": "base", "sha": pr.base}, "head": {"ref": f"pr-{pr.number}", "sha": pr.head, "repo": name}}
    try:
        verdict = judge_world(pull_world(git, commits, name, pull, pr.merged_at)).verdict
    except (GitError, KeyError, OSError) as exc:
        return Row(pr, "ERROR", error=f"{pr.commit[:12]} cannot be read: {exc}")
    return _row(pr, verdict)


def _row(pr: MergedPR, verdict: Verdict) -> Row:
    checks = {r.number: r for r in verdict.results if r.number in CONTENT_CHECKS}
    row = Row(pr, "PASS", checks, verdict.lint, verdict.lint_blocking)
    row.verdict = "REJECTED" if row.failing else "UNDECIDED" if row.undecided else "PASS"
    return row


def backtest(repo: str | Path, since: date | None = None, until: date | None = None,
             progress: Callable[[int, int, MergedPR], None] | None = None, workers: int | None = None) -> list[Row]:
    """One row per merged PR of the window, oldest first; PRs are judged in `workers` processes (default:
    one per CPU), each reading the repository through a `git cat-file` of its own."""
    git = Git(repo)
    try:
        prs = merged_prs(git, default_branch(git), since, until)
        name = repo_name(git)
    finally:
        git.close()
    workers = max(1, min(workers or os.cpu_count() or 1, len(prs)))
    rows: list[Row] = []
    if workers == 1:
        _start(str(repo), name)
        results = map(_judge, prs)
        pool = None
    else:
        pool = multiprocessing.get_context(_START).Pool(workers, initializer=_start, initargs=(str(repo), name))
        results = pool.imap(_judge, prs, chunksize=_CHUNK)  # in order; neighbours share commits, so in chunks
    try:
        for i, row in enumerate(results, 1):
            if progress:
                progress(i, len(prs), row.pr)
            rows.append(row)
    finally:
        if pool is not None:
            pool.close()
            pool.join()
        _stop()
    return rows


_START = "fork" if "fork" in multiprocessing.get_all_start_methods() else "spawn"
_CHUNK = 4
_worker: tuple[Git, Commits, str] | None = None


def _start(repo: str, name: str) -> None:
    """A process's own reader of the repository."""
    global _worker
    git = Git(repo)
    _worker = (git, Commits(git), name)


def _judge(pr: MergedPR) -> Row:
    assert _worker is not None
    git, commits, name = _worker
    return backtest_one(git, commits, name, pr)


def _stop() -> None:
    global _worker
    if _worker is not None:
        _worker[0].close()
        _worker = None


def summary(rows: list[Row]) -> dict:
    def per_check(status: Status) -> dict[str, int]:
        counted = Counter(r.number for row in rows for r in row.checks.values() if r.status is status)
        return {str(n): counted.get(n, 0) for n in CONTENT_CHECKS}

    lint_fails = sum(1 for row in rows if row.lint is not None and row.lint.status is Status.FAIL)
    return {
        "prs": len(rows),
        "passed": sum(1 for r in rows if r.verdict == "PASS"),
        "rejected": sum(1 for r in rows if r.verdict == "REJECTED"),
        "undecided": sum(1 for r in rows if r.verdict == "UNDECIDED"),
        "errors": sum(1 for r in rows if r.verdict == "ERROR"),
        "check_failures": per_check(Status.FAIL),
        "check_undecided": per_check(Status.UNDECIDED),
        "lint_failures": lint_fails,
        "notes": sum(len(r.notes) for row in rows for r in row.checks.values()),
        "not_backtested": NOT_BACKTESTED,
    }


def to_json(rows: list[Row]) -> dict:
    return {"prs": [r.to_json() for r in rows], "summary": summary(rows)}


def table(rows: list[Row]) -> str:
    lines = [f"{'PR':>6}  {'commit':<12}  {'merged':<10}  {'verdict':<9}  failing or undecided", "-" * 78]
    for row in rows:
        failing = ", ".join(_label(r) for r in row.failing or row.undecided) or (row.error or "")
        lines.append(f"{'#' + str(row.pr.number):>6}  {row.pr.commit[:12]}  {row.pr.merged_at[:10]}  {row.verdict:<9}  "
                     f"{failing}".rstrip())
    s = summary(rows)
    lines += ["", f"{s['prs']} PRs: {s['passed']} PASS, {s['rejected']} REJECTED, {s['undecided']} UNDECIDED, "
                  f"{s['errors']} unreadable",
              "FAILs per check: " + ", ".join(f"{n}: {c}" for n, c in s["check_failures"].items())
              + f"; recipe lint (advice unless blocking): {s['lint_failures']}",
              "UNDECIDED per check: " + ", ".join(f"{n}: {c}" for n, c in s["check_undecided"].items()),
              f"Note: {NOT_BACKTESTED}."]
    return "\n".join(lines)


def _label(r: CheckResult) -> str:
    return f"check {r.number}" if r.number in CONTENT_CHECKS else r.name


def report(rows: list[Row], title: str) -> str:
    """Markdown: FAILs and UNDECIDEDs per check, their reasons grouped, every rejected and every undecided PR
    with its findings, and the notes (what the sign-off must link)."""
    s = summary(rows)
    out = [f"# Backtest of {title}", "",
           f"{s['prs']} squash-merged PRs: **{s['passed']} PASS**, **{s['rejected']} REJECTED**, "
           f"**{s['undecided']} UNDECIDED** (a maintainer would be asked), {s['errors']} unreadable.", "",
           f"_{NOT_BACKTESTED}._", "",
           "## FAILs and UNDECIDEDs per check", "", "| check | FAILs | UNDECIDED |", "|---|---|---|"]
    out += [f"| {n} | {c} | {s['check_undecided'][n]} |" for n, c in s["check_failures"].items()]
    out += [f"| recipe lint (advice{'' if not any(r.lint_blocking for r in rows) else ', blocking'}) | "
            f"{s['lint_failures']} | |", "", "## Reasons, grouped", ""]
    groups: dict[tuple[str, str], list[int]] = defaultdict(list)
    for row in rows:
        for r in _all_failing(row):
            groups[(_label(r) + (" (undecided)" if r.status is Status.UNDECIDED else ""),
                    _reason_shape(r))].append(row.pr.number)
    for (label, shape), numbers in sorted(groups.items(), key=lambda kv: (-len(kv[1]), kv[0])):
        out.append(f"- **{label}** ({len(numbers)}): {shape} — " + ", ".join(f"#{n}" for n in numbers))
    for heading, verdicts, listed in (("Rejected PRs", ("REJECTED", "ERROR"), Row.failing.fget),
                                      ("Undecided PRs", ("UNDECIDED",), Row.undecided.fget)):
        out += ["", f"## {heading}", ""]
        for row in rows:
            if row.verdict not in verdicts:
                continue
            out.append(f"### #{row.pr.number} {row.pr.title} ({row.pr.commit[:12]}, {row.pr.merged_at[:10]})")
            out.append("")
            if row.error:
                out.append(f"- cannot be read: {row.error}")
            for r in listed(row):
                out.append(f"- {_label(r)}: {r.reason}")
                out += [f"  - `{f.path}:{f.line}` [{f.rule}] {f.message}" for f in r.findings]
            out.append("")
    notes = [(row, r, note) for row in rows for r in row.checks.values() for note in r.notes]
    if notes:
        out += ["", "## Notes", "", "What the sign-off must link, where the repository holds it:", ""]
        out += [f"- #{row.pr.number} {_label(r)}: {note}" for row, r, note in notes]
    return "\n".join(out).rstrip() + "\n"


def _all_failing(row: Row) -> Iterator[CheckResult]:
    yield from (r for r in row.checks.values() if r.status in (Status.FAIL, Status.UNDECIDED))
    if row.lint is not None and row.lint.status is Status.FAIL:
        yield row.lint


_VARYING = re.compile(r"`[^`]*`|'[^']*'|\"[^\"]*\"|\((?:[^()]|\([^()]*\))*\)|[^\s,;:]*[/\d][^\s,;:]*")


def _reason_shape(r: CheckResult) -> str:
    """A reason's first clause with what varies from PR to PR (paths, quoted text, parentheses, names with
    digits) elided, so one misread groups across PRs."""
    first = (r.findings[0].message if r.findings else r.reason).split(";", 1)[0]
    return re.sub(r"(?:…\s*)+", "… ", _VARYING.sub("…", first)).strip()[:160]


def parse_date(text: str | None) -> date | None:
    if text is None:
        return None
    try:
        return date.fromisoformat(text)
    except ValueError:
        raise ValueError(f"not a date: {text!r} (expected YYYY-MM-DD)") from None


def progress_line(stream=sys.stderr) -> Callable[[int, int, MergedPR], None]:
    """Progress on `stream`: one rewritten line on a terminal, else a line every 25 PRs."""
    tty = stream.isatty()

    def show(i: int, total: int, pr: MergedPR) -> None:
        if tty:
            stream.write(f"\rbacktest: {i}/{total} #{pr.number} {pr.merged_at[:10]}\033[K")
            if i == total:
                stream.write("\n")
        elif i == 1 or i % 25 == 0 or i == total:
            stream.write(f"backtest: {i}/{total} #{pr.number} {pr.merged_at[:10]}\n")
        stream.flush()

    return show

