"""Gather a pull request's snapshot from GitHub through githubkit.

The head SHA is resolved once and pinned for the whole snapshot. Policy
files are read from the tip of the PR's base branch (pinned by SHA), never
from the PR. Every read is sent as soon as what it is keyed by is known,
in waves: the PR and everything keyed by its number (files, commits,
comments, reviews, review comments) at once; then what the PR names (the
trees at base and head, the base branch with its tree and config read by
name beside it, the check runs of each commit) and, once the comments are
in, who last edited them; then the blobs of those trees, the workflow runs
behind the check runs and the artifact lists of the green ones; then their
eval and benchmark artifacts (a download, then its redirect). The last are
read ahead of the evidence round that asks for them (`_prefetch_artifacts`),
and so are the sign-off author's team memberships and the upstream recipes
the sign-off links (`_read_ahead`; checks/anticipated.py names them); the checks run off
the event loop meanwhile (app/judge.py). Pagination is followed everywhere. Every read is made once per
gatherer, even when asked for again meanwhile or in a later round; blobs
are read by SHA. The base text of a modified file is rebuilt from its head
text and GitHub's patch when that reproduces the base blob's SHA, which
saves a request per file (and for any other read of that blob, such as a
master config). What never changes (blobs by SHA, files at a commit,
artifacts) is kept by the client for the next verification, which then asks
GitHub only what may have changed. Trees are read every time (a 304 when
unchanged, which costs no rate limit): that read is where a gather learns it
may still read the repository, before anything kept is used. Lists GitHub
truncates (over 3,000 files, 250 commits) make the snapshot fail closed.

Gathering runs in rounds: a first snapshot, then the evidence the checks
found missing (`checks.engine.Completion`), until nothing more is wanted; the
last round's verdict comes with the snapshot. The rounds are
`app.fetcher.complete`, as for a world: the Gatherer is the `Fetcher` that
reads their evidence from GitHub. The checks run where `checks`
runs them (app/judge.py: a process of its own in the server). Nothing of the PR head is
executed or checked out.

Two facts come from beyond the REST lists: who last edited each user's
comment (GraphQL, app/github/edits.py, in one query per 100 comments, beside the
other chains), since only its author's own words are a sign-off; and what
this App recorded in its own sign-off check runs on the PR's commits
(`CheckRun.record`), read only from runs of the App's id, which no one else
can write.
"""

from __future__ import annotations

import asyncio
import base64
import re
from collections.abc import Collection
from dataclasses import replace
from typing import Any, Awaitable, Callable, Hashable, TypeVar

from githubkit import GitHub
from githubkit.exception import RequestFailed

from app.fetcher import complete
from app.files import MAX_TEXT_BYTES, NOT_FOLLOWED, SYMLINK_MODE, blob_sha, decode_text
from app.judge import IN_THREAD, Checks, Rounds
from app.settings import CHECK_NAME
from checks import anticipated
from checks.evidence import UpstreamTarget
from checks.facts import signoff
from checks.policy import CONFIG_PATH, Policy
from checks.registry import RULES
from checks.rule import Rule
from checks.snapshot import (
    Artifact,
    ArtifactFiles,
    ChangedFile,
    CheckRun,
    Comment,
    PullRequest,
    Snapshot,
    UpstreamDoc,
    WorkflowRun,
    frozen_map,
)

from . import artifacts as artifact_zip
from .client import GitHubError, app_id_of, as_github_error, call, is_name, pages, reads_teams, url_path
from .edits import LastEdit, last_edits
from .objects import as_artifact, as_check_run, as_comment, as_workflow_run, iso
from .patches import base_from_patch

MAX_FILES = 3000
MAX_COMMITS = 250
PER_PAGE = 100
_SHA = re.compile(r"[0-9a-f]{40}")
T = TypeVar("T")


class Gatherer:
    """Reads one repository through one githubkit client; each read once, blobs by SHA, across calls."""

    def __init__(self, gh: GitHub, repo: str, bot_login: str = "signoff-bot[bot]", checks: Checks = IN_THREAD,
                 config_path: str = CONFIG_PATH):
        self.gh = gh
        self.checks = checks  # where the evidence rounds' checks run (app/judge.py)
        self.repo = repo
        self.owner, self.name = repo.split("/", 1)
        self.bot_login = bot_login
        self.app_id = app_id_of(gh)  # whose sign-off check runs' records are read (None: a user's token)
        self.reads_teams = reads_teams(gh)  # whether a 404 on a team membership means "not a member"
        self._reads: dict[Hashable, asyncio.Future] = {}
        self._kept = getattr(gh, "kept", None)  # app.github.client.ConditionalGitHub's, when it is one
        # Where the repository keeps its policy file (the Action's `config` input; `Snapshot.config_path`).
        self.config_path = config_path

    # --- plumbing ------------------------------------------------------------

    def _once(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """The one read of `key`: started on the first ask, shared by every later or concurrent one."""
        if key not in self._reads:
            self._reads[key] = asyncio.ensure_future(read())
        return self._reads[key]

    def _immutable(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> Awaitable[T]:
        """A read of what never changes: once per gatherer, and from the client's kept reads when it has it."""
        return self._once(key, lambda: self._kept_or(key, read))

    async def _kept_or(self, key: Hashable, read: Callable[[], Awaitable[T]]) -> T:
        hit = self._kept.get(key) if self._kept is not None else None
        if hit is not None:
            return hit[0]
        value = await read()
        if self._kept is not None:
            self._kept.put(key, (value,), _weight(value))
        return value

    async def _parsed(self, what: str, fn, *args, **kw):
        resp = await call(what, fn, *args, **kw)
        try:
            return resp.parsed_data
        except Exception as exc:  # noqa: BLE001 - a missing required field raises only here
            raise as_github_error(exc, what) from None

    def _tree(self, sha: str, repo: str | None = None) -> Awaitable[dict[str, tuple[str, int, str]]]:
        """path -> (blob SHA, size, mode) of every file and symlink in the commit (recursive); fails closed
        if truncated."""
        repo = repo or self.repo
        return self._once(("tree", repo, sha), lambda: self._read_tree(sha, repo))

    async def _read_tree(self, sha: str, repo: str) -> dict[str, tuple[str, int, str]]:
        return (await self._tree_of(sha, repo))[1]

    async def _tree_of(self, ref: str, repo: str) -> tuple[str, dict[str, tuple[str, int, str]]]:
        """(the tree's SHA, its files) of commit or branch `ref`."""
        owner, name = repo.split("/", 1)
        tree = await self._parsed(f"tree {ref[:40]}", self.gh.rest.git.async_get_tree, owner, name, ref,
                                  recursive="1")
        if tree.truncated:
            raise GitHubError(f"the tree of {ref[:40]} is too large for GitHub to list; cannot gather", 422)
        return tree.sha, {e.path: (e.sha, int(e.size or 0), str(e.mode)) for e in tree.tree
                          if e.type == "blob" and e.path and e.sha}

    async def _text(self, entry: tuple[str, int, str] | None,
                    repo: str | None = None) -> tuple[str | None, str | None]:
        """(text, None) or (None, why not) of a blob; content-addressed, so read once.
        A symlink's blob is its target path: never read as the file's text."""
        if entry is None:
            return None, None
        sha, size, mode = entry
        if mode == SYMLINK_MODE:
            return None, NOT_FOLLOWED
        if size > MAX_TEXT_BYTES:  # never download what decode_text would refuse
            return None, f"file is {size:,} bytes, over the {MAX_TEXT_BYTES:,}-byte limit; not read"
        repo = repo or self.repo
        return await self._immutable(("blob", repo, sha), lambda: self._blob(repo, sha))

    async def _blob(self, repo: str, sha: str) -> tuple[str | None, str | None]:
        owner, name = repo.split("/", 1)
        blob = await self._parsed(f"blob {sha[:12]}", self.gh.rest.git.async_get_blob, owner, name, sha)
        raw = base64.b64decode(blob.content) if blob.encoding == "base64" else blob.content.encode()
        return decode_text(raw)

    def _rebuild_base(self, f, base_tree: dict, head_tree: dict) -> None:
        """Read the base blob of a modified file as its head text with the patch reversed (see the module doc)."""
        base, head = base_tree.get(f.filename), head_tree.get(f.filename)
        if str(f.status) not in ("modified", "changed") or not f.patch or base is None or head is None:
            return
        self._immutable(("blob", self.repo, base[0]), lambda: self._rebuilt(base[0], head, f.patch))

    async def _rebuilt(self, sha: str, head: tuple[str, int, str], patch: str) -> tuple[str | None, str | None]:
        head_text, _err = await self._text(head)
        text = base_from_patch(head_text, patch) if head_text is not None else None
        if text is not None and blob_sha(text) == sha:
            return text, None
        return await self._blob(self.repo, sha)

    async def _contents(self, path: str, ref: str, repo: str | None = None) -> str | None:
        """Text of `path` at `ref`; None when absent (404) or not text."""
        repo = repo or self.repo
        read = self._immutable if _SHA.fullmatch(ref) else self._once  # a branch moves; a commit does not
        return await read(("contents", repo, path, ref), lambda: self._read_contents(path, ref, repo))

    async def _read_contents(self, path: str, ref: str, repo: str) -> str | None:
        owner, _, name = repo.partition("/")
        quoted = url_path(path)
        if not (is_name(owner) and is_name(name)) or quoted is None:
            return None  # no request can name it (a path or a link read from the PR: its text reaches the URL)
        try:
            resp = await self.gh.rest.repos.async_get_content(owner, name, quoted, ref=ref)
        except RequestFailed as exc:
            if exc.response.status_code == 404:
                return None
            raise as_github_error(exc, f"contents {path}") from None
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, f"contents {path}") from None
        try:
            data = resp.parsed_data
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, f"contents {path}") from None
        if isinstance(data, list) or getattr(data, "type", "file") != "file" or data.content is None:
            return None
        raw = base64.b64decode(data.content) if data.encoding == "base64" else str(data.content).encode()
        return decode_text(raw)[0]

    def known_pull(self, number: int, pull: Any) -> None:
        """Take `pull` (GitHub's object, read a moment ago by the same command) as this gatherer's read of it."""
        self._once(("pull", number), lambda: _value(pull))

    # --- the snapshot ----------------------------------------------------------

    async def verify(self, number: int, now: str, rules: tuple[Rule, ...] = RULES) -> Rounds:
        """The PR's snapshot and verdict after the evidence rounds; `rules` limits which rules run and may ask
        for evidence (default: all)."""
        done: Rounds | None = None
        try:
            done = await self.checks.rounds(await self._first_round(number, now), rules)
            return await complete(done, self)
        finally:
            if done is not None:
                done.close()
            for read in self._reads.values():
                read.cancel()  # after a failure, reads still running are of no use

    async def snapshot(self, number: int, now: str, rules: tuple[Rule, ...] = RULES) -> Snapshot:
        """The PR's snapshot with the evidence `rules` asked for (see `verify`)."""
        return (await self.verify(number, now, rules)).snapshot

    async def _first_round(self, number: int, now: str) -> Snapshot:
        """The first snapshot, its reads in waves (see the module's docstring): parsing one answer and
        building the snapshot run while the reads that do not wait for them are in flight."""
        rest = self.gh.rest
        o, r = self.owner, self.name
        # Keyed by the number, which the job knows: all at once.
        pull_f = self._once(("pull", number), lambda: self._parsed(f"pull #{number}", rest.pulls.async_get,
                                                                    o, r, number))
        files_f = self._once(("files", number), lambda: pages("PR files", rest.pulls.async_list_files, o, r,
                                                              number, limit=MAX_FILES))
        commits_f = self._once(("commits", number), lambda: pages("PR commits", rest.pulls.async_list_commits,
                                                                  o, r, number, limit=MAX_COMMITS))
        conversation_f = self._once(("conversation", number), lambda: self._conversation(number))
        pull = await pull_f
        base_sha, head_sha = pull.base.sha, pull.head.sha
        # Keyed by a SHA or the base branch, which the PR names: the trees, the base branch and its config,
        # the check runs of each commit (the head's before the commit list is in).
        base_tree_f, head_tree_f = self._tree(base_sha), self._tree(head_sha)
        tip_f = self._once("tip", lambda: self._tip(pull.base.ref))
        policy_f = self._once("policy", lambda: self._policy(pull.base.ref, tip_f))
        self._check_runs(head_sha)
        policy_files_f = self._once("policy files", lambda: self._policy_files(policy_f, base_tree_f, head_tree_f))
        self._once("read ahead", lambda: self._read_ahead(conversation_f, policy_f, policy_files_f))
        (files, changed), (tip_sha, policy_texts, master_base, master_head), (commit_shas, check_runs,
                                                                              workflow_runs), \
            (conversation, edits) = await asyncio.gather(
                self._changed_files(files_f, base_tree_f, head_tree_f),
                policy_files_f,
                self._runs(commits_f, head_sha, policy_f),
                conversation_f,
            )
        truncated = None
        if len(files) >= MAX_FILES:
            truncated = f"GitHub lists at most {MAX_FILES} files of a pull request; this one has more"
        elif len(commit_shas) >= MAX_COMMITS:
            truncated = f"GitHub lists at most {MAX_COMMITS} commits of a pull request; this one has more"
        comments = self._edited(conversation, edits, Policy.from_yaml(policy_texts.get(self.config_path))[0])
        comments.sort(key=lambda c: (c.created_at, c.kind, c.id))

        head_repo = pull.head.repo.full_name if pull.head.repo else ""
        return Snapshot(
            repo=self.repo,
            pr=PullRequest(
                number=pull.number, title=pull.title, body=pull.body or "", author=pull.user.login,
                author_association=str(pull.author_association), state=str(pull.state), draft=bool(pull.draft),
                merged=bool(pull.merged), base_ref=pull.base.ref, base_sha=base_sha, head_ref=pull.head.ref,
                head_sha=head_sha, labels=tuple(label.name for label in pull.labels), head_repo=head_repo,
                url=pull.html_url,
            ),
            now=now,
            files=tuple(sorted(changed, key=lambda f: f.path)),
            commits=tuple(commit_shas),
            comments=tuple(comments),
            check_runs=tuple(check_runs),
            workflow_runs=workflow_runs,
            policy_sha=tip_sha,
            policy=frozen_map(policy_texts),
            config_path=self.config_path,
            master_base=frozen_map(master_base),
            master_head=frozen_map(master_head),
            bot_login=self.bot_login,
            truncated=truncated,
        )

    async def _conversation(self, number: int) -> tuple[list[tuple[Comment, str]], dict[str, LastEdit]]:
        """The PR's comments, reviews and review comments with their node ids, and who last edited the users'
        ones (GraphQL, as soon as the lists are in)."""
        rest = self.gh.rest
        o, r = self.owner, self.name
        issue_comments, reviews, review_comments = await asyncio.gather(
            pages("issue comments", rest.issues.async_list_comments, o, r, number),
            pages("reviews", rest.pulls.async_list_reviews, o, r, number),
            pages("review comments", rest.pulls.async_list_review_comments, o, r, number),
        )
        listed = [(c, "issue_comment", c.created_at) for c in issue_comments]
        listed += [(c, "review", c.submitted_at) for c in reviews]
        listed += [(c, "review_comment", c.created_at) for c in review_comments]
        conversation = [(as_comment(c, kind, at), c.node_id) for c, kind, at in listed]
        users = {node: c.body for c, node in conversation if not signoff.is_bot(c, self.bot_login)}
        return conversation, await last_edits(self.gh, users)

    async def _changed_files(self, files_f: Awaitable[list], base_tree_f: Awaitable[dict],
                             head_tree_f: Awaitable[dict]) -> tuple[list, list[ChangedFile]]:
        """The PR's files as listed, and as changed files with their texts at base and head."""
        files, base_tree, head_tree = await asyncio.gather(files_f, base_tree_f, head_tree_f)
        for f in files:
            self._rebuild_base(f, base_tree, head_tree)
        return files, list(await asyncio.gather(*(self._changed_file(f, base_tree, head_tree) for f in files)))

    def _edited(self, conversation: list[tuple[Comment, str]], edits: dict[str, LastEdit],
                policy: Policy) -> list[Comment]:
        """The comments, users' with who last edited them. A sign-off whose body changed between the REST
        and the GraphQL read is read again later (another comment's last editor is then unknown)."""
        out = []
        for c, node in conversation:
            edit = edits.get(node)
            if edit is None:
                out.append(c)
                continue
            if edit.changed and signoff.is_signoff(c, policy.signoff_phrase, self.bot_login):
                raise GitHubError("a sign-off changed while it was being read; reading it again", 503)
            out.append(replace(c, last_editor=edit.editor, edited_at=edit.at))
        return out

    async def _changed_file(self, f, base_tree: dict, head_tree: dict) -> ChangedFile:
        status = str(f.status)
        status = {"changed": "modified", "copied": "added"}.get(status, status)
        previous = f.previous_filename or None
        patch = f.patch or None
        (head_text, head_err), (base_text, base_err) = await asyncio.gather(
            self._text(None if status == "removed" else head_tree.get(f.filename)),
            self._text(None if status == "added" else base_tree.get(previous or f.filename)),
        )
        return ChangedFile(f.filename, status, previous, patch, base_text, head_text, head_err or base_err)

    async def _tip(self, base_ref: str) -> tuple[str, dict, tuple | None]:
        """(the base branch tip's SHA, its tree, a guess at its config). The tree and the config are read by
        branch name while the branch itself is read (and the PR's base tree, which is the same when the PR is
        based on the tip, is read by SHA: one request more then, one round trip less when it is not): the
        tree is the tip's when its SHA is the one the branch's commit names (else the tip's is read by SHA);
        the guess is checked in `_policy`."""
        branch, at_branch, guess = await asyncio.gather(
            self._parsed(f"branch {base_ref}", self.gh.rest.repos.async_get_branch, self.owner, self.name,
                         base_ref),
            _or_none(self._tree_of(base_ref, self.repo)),
            self._config_at(base_ref),
        )
        tip_sha = branch.commit.sha
        if at_branch is not None and at_branch[0] == branch.commit.commit.tree.sha:
            self._once(("tree", self.repo, tip_sha), lambda: _value(at_branch[1]))
        tip_tree = await self._tree(tip_sha)
        return tip_sha, tip_tree, guess

    async def _policy(self, base_ref: str,
                      tip_f: Awaitable[tuple[str, dict, tuple | None]]) -> tuple[str, dict, Policy]:
        """(the tip's SHA, its tree, the policy its config sets). The config read by path is the config's blob
        whenever the tip's tree names the same blob (content-addressed); else the blob is read."""
        tip_sha, tip_tree, guess = await tip_f
        entry = tip_tree.get(self.config_path)
        if entry is not None and self._kept is not None:
            self._kept.discard(("no config at", self.repo, self.config_path, base_ref))
        if guess is not None and entry is not None and guess[0] == entry[0] and entry[2] != SYMLINK_MODE:
            self._immutable(("blob", self.repo, entry[0]), lambda: _value(guess[1]))
        return tip_sha, tip_tree, Policy.from_yaml((await self._text(entry))[0])[0]

    async def _config_at(self, ref: str) -> tuple[str, tuple[str | None, str | None]] | None:
        """(blob SHA, (text, why not)) of the config at branch `ref`; None when there is none to guess from.
        A branch found without a config is not asked again by this client (a 404 is not conditional, so it
        would count against the rate limit every time) until a tip's tree shows one (`_policy`)."""
        absent = ("no config at", self.repo, self.config_path, ref)
        quoted = url_path(self.config_path)
        if quoted is None or self._kept is not None and self._kept.get(absent) is not None:
            return None
        try:
            resp = await self.gh.rest.repos.async_get_content(self.owner, self.name, quoted, ref=ref)
            data = resp.parsed_data
        except RequestFailed as exc:
            if exc.response.status_code == 404 and self._kept is not None:
                self._kept.put(absent, (True,), 64)
            return None
        except Exception:  # noqa: BLE001 - only a guess: the config is then read by its blob
            return None
        if isinstance(data, list) or getattr(data, "type", "") != "file" or data.content is None \
                or data.encoding != "base64" or (data.size or 0) > MAX_TEXT_BYTES:
            return None
        return data.sha, decode_text(base64.b64decode(data.content))

    async def _policy_files(self, policy_f: Awaitable[tuple[str, dict, Policy]], base_tree_f: Awaitable[dict],
                            head_tree_f: Awaitable[dict]):
        """(the tip's SHA, policy files at the base branch tip, master configs at base, at head), each
        path -> text."""
        (tip_sha, tip_tree, policy), base_tree, head_tree = await asyncio.gather(policy_f, base_tree_f, head_tree_f)
        policy_texts, master_base, master_head = await asyncio.gather(
            self._texts(tip_tree, [p for p in tip_tree if policy.is_policy_file(p)]),
            self._texts(base_tree, [p for p in base_tree if policy.is_master_config(p)]),
            self._texts(head_tree, [p for p in head_tree if policy.is_master_config(p)]),
        )
        if self.config_path != CONFIG_PATH:  # the policy file is where the repository keeps it, not the default
            policy_texts.pop(CONFIG_PATH, None)
            config = (await self._text(tip_tree.get(self.config_path)))[0]
            if config is not None:
                policy_texts[self.config_path] = config
        return tip_sha, policy_texts, master_base, master_head

    async def _texts(self, tree: dict, paths: list[str]) -> dict[str, str]:
        """path -> text of those of `paths` that are text."""
        paths = sorted(paths)
        texts = await asyncio.gather(*(self._text(tree[p]) for p in paths))
        return {p: t for p, (t, _e) in zip(paths, texts) if t is not None}

    async def _runs(self, commits_f: Awaitable[list], head_sha: str,
                    policy_f: Awaitable[tuple[str, dict, Policy]]) -> tuple[list[str], list[CheckRun],
                                                                           tuple[WorkflowRun, ...]]:
        """The PR's commits, the check runs on them, and the workflow runs they belong to. The artifacts of
        the runs behind green check runs are read meanwhile (`_prefetch_artifacts`)."""
        commit_shas = [c.sha for c in await commits_f] or [head_sha]
        run_lists = await asyncio.gather(*(self._check_runs(sha) for sha in commit_shas))
        check_runs = sorted((as_check_run(c, self.app_id) for runs in run_lists for c in runs),
                            key=lambda c: (c.head_sha, c.name, c.id))
        run_ids = sorted({c.run_id for c in check_runs if c.run_id is not None})
        green = sorted({c.run_id for c in check_runs if c.run_id is not None and c.conclusion == "success"})
        self._once("artifact prefetch", lambda: self._prefetch_artifacts(green, policy_f))
        workflow_runs = await asyncio.gather(*(self._workflow_run(i) for i in run_ids))
        return commit_shas, check_runs, tuple(w for w in workflow_runs if w is not None)

    def _check_runs(self, sha: str) -> Awaitable[list]:
        """Every check run on commit `sha` (GitHub's objects, as listed)."""
        return self._once(("check runs", sha), lambda: pages(
            f"check runs of {sha[:12]}", self.gh.rest.checks.async_list_for_ref, self.owner, self.name, sha,
            key="check_runs", filter_="all"))

    async def _prefetch_artifacts(self, run_ids: list[int], policy_f: Awaitable[tuple[str, dict, Policy]]) -> None:
        """Read ahead what the evidence round most likely asks for (checks.rules.check02_evals audits the run behind the
        green sweep): the artifact lists of the runs behind green check runs, and their eval and benchmark
        artifacts. Only a head start: every read is one of `_once`, which the round then shares; a failure
        here is the round's to meet, if it asks."""
        try:
            listed, (_tip, _tree, policy) = await asyncio.gather(
                asyncio.gather(*(self._artifacts_of(i) for i in run_ids)), policy_f)
        except Exception:  # noqa: BLE001 - see the docstring
            return
        prefixes = policy.eval_artifact_prefixes + policy.bmk_artifact_prefixes
        for run_id, artifacts in zip(run_ids, listed):
            for a in artifacts:
                if a.name.startswith(prefixes):
                    _quiet(self._artifact(run_id, a))

    async def _read_ahead(self, conversation_f: Awaitable, policy_f: Awaitable[tuple[str, dict, Policy]],
                          policy_files_f: Awaitable) -> None:
        """Read what the first evidence round will most likely ask for (checks/anticipated.py) as soon as what
        names it is in: the upstream recipes once the conversation and the policy are, the sign-off author's
        team memberships once CODEOWNERS is. Only a head start, like `_prefetch_artifacts`."""
        try:
            ((conversation, _edits), (_tip, _tree, policy)) = await asyncio.gather(conversation_f, policy_f)
            sign = anticipated.find_signoff((c for c, _node in conversation), policy, self.bot_login)
            for target in anticipated.upstream(sign):
                _quiet(self.upstream(target))
            _tip_sha, policy_texts, _base, _head = await policy_files_f
        except Exception:  # noqa: BLE001 - see the docstring
            return
        for team, login in anticipated.memberships(sign, policy, policy_texts):
            _quiet(self.membership(team, login))

    def owned_check_runs(self, sha: str) -> list | None:
        """This App's `codeowner-signoff-verify` runs on `sha` as listed while gathering, newest first, as
        GitHub's `filter=latest` lists them (app/github/publish.py updates the first); None if `sha`'s were not read."""
        read = self._reads.get(("check runs", sha))
        if self.app_id is None or read is None or not read.done() or read.cancelled() or read.exception():
            return None
        mine = [c for c in read.result() if c.name == CHECK_NAME and c.app is not None and c.app.id == self.app_id]
        return sorted(mine, key=lambda c: (iso(c.started_at), c.id), reverse=True)[:1]

    async def records_on(self, sha: str) -> list[str]:
        """The records of the App's own sign-off check runs on commit `sha` (one no longer in the PR)."""
        if self.app_id is None:
            return []
        try:
            runs = await pages(f"check runs of {sha[:12]}", self.gh.rest.checks.async_list_for_ref, self.owner,
                               self.name, sha, key="check_runs", check_name=CHECK_NAME, app_id=self.app_id,
                               filter_="all")
        except GitHubError as exc:
            if exc.status in (404, 422):  # a commit GitHub no longer knows
                return []
            raise
        return [r.record for r in (as_check_run(c, self.app_id) for c in runs) if r.record]

    async def _workflow_run(self, run_id: int) -> WorkflowRun | None:
        """The run's record, without its artifacts; None when GitHub does not know it."""
        return await self._once(("run", run_id), lambda: self._read_workflow_run(run_id))

    async def _read_workflow_run(self, run_id: int) -> WorkflowRun | None:
        try:
            run = await self._parsed(f"workflow run {run_id}", self.gh.rest.actions.async_get_workflow_run,
                                     self.owner, self.name, run_id)
        except GitHubError as exc:
            if exc.status == 404:
                return None
            raise
        return as_workflow_run(run)

    async def _artifacts_of(self, run_id: int) -> tuple[Artifact, ...]:
        found = await self._once(("artifacts", run_id), lambda: pages(
            f"artifacts of run {run_id}", self.gh.rest.actions.async_list_workflow_run_artifacts,
            self.owner, self.name, run_id, key="artifacts"))
        return tuple(as_artifact(a) for a in found)

    # --- the evidence rounds: what the checks asked for (app.fetcher.Fetcher) ---------------

    async def file(self, sha: str, path: str) -> str | None:
        """Text of `path` at commit `sha`. From the commit's tree when this gatherer read it (the base, the
        head, the base branch tip): a path the tree lacks costs no request, one it holds is its blob, read
        once and shared with every other read of it, and a symlink is not followed, as everywhere else.
        Any other commit's file is read by path."""
        tree = self._reads.get(("tree", self.repo, sha))
        if tree is None:
            return await self._contents(path, sha)
        return (await self._text((await tree).get(path)))[0]

    async def paths(self, sha: str) -> Collection[str]:
        """The files of commit `sha`, from its tree (read once)."""
        return (await self._tree(sha)).keys()

    async def run(self, run_id: int, prefixes: tuple[str, ...]) -> tuple[WorkflowRun | None, list]:
        """A workflow run with its artifacts listed, and its eval and benchmark artifacts unpacked."""
        run = await self._workflow_run(run_id)
        if run is None:
            return None, []
        run = replace(run, artifacts=await self._artifacts_of(run_id))
        wanted_artifacts = [a for a in run.artifacts if a.name.startswith(prefixes)]
        return run, list(await asyncio.gather(*(self._artifact(run_id, a) for a in wanted_artifacts)))

    async def _artifact(self, run_id: int, artifact: Artifact) -> ArtifactFiles:
        key = ("artifact", artifact.id, artifact.expired)  # an artifact's files never change, until it expires
        return await self._immutable(key, lambda: self._read_artifact(run_id, artifact))

    async def _read_artifact(self, run_id: int, artifact: Artifact) -> ArtifactFiles:
        if artifact.expired:
            return ArtifactFiles(artifact.id, artifact.name, run_id, error="artifact expired")
        too_big = artifact_zip.oversize(artifact.size_in_bytes)
        if too_big:
            return ArtifactFiles(artifact.id, artifact.name, run_id, error=too_big)
        resp = await call(f"artifact {artifact.id}", self.gh.rest.actions.async_download_artifact,
                                self.owner, self.name, artifact.id, "zip")
        files, error = artifact_zip.unpack(resp.content)
        return ArtifactFiles(artifact.id, artifact.name, run_id, frozen_map(files), error)

    async def upstream(self, target: UpstreamTarget) -> UpstreamDoc:
        return await self._once(("upstream", target), lambda: self._read_upstream(target))

    async def _read_upstream(self, target: UpstreamTarget) -> UpstreamDoc:
        owner, _, name = target.repo.partition("/")
        if not (is_name(owner) and is_name(name)):  # the sign-off's link names no repository GitHub could have
            return UpstreamDoc(target.url, target.kind, target.repo, target.number, error=target.not_found())
        try:
            if target.kind == "pull":
                return await self._upstream_pull(target)
            return await self._upstream_page(target)
        except GitHubError as exc:
            return UpstreamDoc(target.url, target.kind, target.repo, target.number,
                               error=f"{target.repo} could not be read ({exc})")

    async def _upstream_pull(self, target: UpstreamTarget) -> UpstreamDoc:
        owner, name = target.repo.split("/", 1)
        what = f"{target.repo}#{target.number}"
        listing = self._once(("upstream files", target.repo, target.number), lambda: pages(
            f"files of {what}", self.gh.rest.pulls.async_list_files, owner, name, target.number))
        _quiet(listing)  # unread if the pull is not found
        try:  # the pull and its files at once: only the files' texts wait for the pull's commit
            resp = await call(what, self.gh.rest.pulls.async_get, owner, name, target.number)
        except GitHubError as exc:
            if exc.status == 404:
                return UpstreamDoc(target.url, "pull", target.repo, target.number, error=target.not_found(),
                                   missing=True)
            raise
        try:
            pull = resp.parsed_data
            # Newer API schemas dropped merge_commit_sha from the model; GitHub still sends it.
            merge_sha = resp.json().get("merge_commit_sha")
        except Exception as exc:  # noqa: BLE001
            raise as_github_error(exc, what) from None
        merged = bool(pull.merged)
        ref = merge_sha if merged and merge_sha else pull.head.sha
        listed = await listing
        paths = sorted(f.filename for f in listed if str(f.status) != "removed")
        texts = await asyncio.gather(*(self._contents(p, ref, target.repo) for p in paths))
        return UpstreamDoc(
            target.url, "pull", target.repo, target.number, state=str(pull.state), draft=bool(pull.draft),
            merged=merged, merged_at=iso(pull.merged_at) or None, title=pull.title,
            files=frozen_map({p: t for p, t in zip(paths, texts) if t is not None}),
        )

    async def _upstream_page(self, target: UpstreamTarget) -> UpstreamDoc:
        owner, name = target.repo.split("/", 1)
        try:
            repo = await self._parsed(target.repo, self.gh.rest.repos.async_get, owner, name)
        except GitHubError as exc:
            if exc.status == 404:
                return UpstreamDoc(target.url, "page", target.repo, error=target.not_found(), missing=True)
            raise
        texts = await asyncio.gather(*(self._contents(p, repo.default_branch, target.repo) for p in target.paths))
        for path, text in zip(target.paths, texts):  # all at once; the first that exists is the page's
            if text is not None:
                return UpstreamDoc(target.url, "page", target.repo, files=frozen_map({path: text}))
        return UpstreamDoc(target.url, "page", target.repo,
                           error=f"no {' or '.join(target.paths) or 'source file'} on "
                                 f"{target.repo}@{repo.default_branch}", missing=True)

    async def membership(self, team: str, login: str) -> bool | None:
        """True/False when GitHub says whether `login` is in `team`; None when it will not say (a 403, or a 404
        to a token that cannot read the organisation's teams: GitHub hides them from it)."""
        return await self._once(("member", team, login), lambda: self._read_membership(team, login))

    async def _read_membership(self, team: str, login: str) -> bool | None:
        org, _, slug = team.partition("/")
        if not (is_name(org) and is_name(slug) and is_name(login)):
            return False  # a team or login GitHub cannot have: no one is its member
        try:
            m = await self._parsed(f"membership of {login} in {team}", self.gh.rest.teams.async_get_membership_for_user_in_org,
                                   org, slug, login)
        except GitHubError as exc:
            if exc.status == 404:
                return False if self.reads_teams else None
            if exc.status == 403:
                return None
            raise
        return str(m.state) == "active"

    async def permission(self, login: str) -> str:
        return await self._once(("permission", login), lambda: self._read_permission(login))

    async def _read_permission(self, login: str) -> str:
        if not is_name(login):
            return "none"
        try:
            p = await self._parsed(f"permission of {login}", self.gh.rest.repos.async_get_collaborator_permission_level,
                                   self.owner, self.name, login)
        except GitHubError as exc:
            if exc.status == 404:
                return "none"
            raise
        return str(p.permission)


async def _value(value: T) -> T:
    return value


async def _or_none(read: Awaitable[T]) -> T | None:
    """A guess's read: None when it fails (what it guessed is then read for sure)."""
    try:
        return await read
    except Exception:  # noqa: BLE001 - see the docstring
        return None


def _quiet(read: Awaitable[Any]) -> None:
    """Let a read ahead fail unobserved: whoever awaits it later meets its error."""
    future = asyncio.ensure_future(read)
    future.add_done_callback(lambda f: f.cancelled() or f.exception())


def _weight(value: Any) -> int:
    """Roughly how many bytes a kept read holds."""
    if isinstance(value, ArtifactFiles):
        return 64 + sum(len(t) for t in value.files.values())
    if isinstance(value, tuple):  # a blob: (text, why not)
        return 64 + sum(len(v) for v in value if isinstance(v, str))
    return 64 + len(value or "")
