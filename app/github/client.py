"""githubkit clients for the bot: explicit timeouts, counted, conditional requests, backing off (app/github/backoff.py).

githubkit's defaults sleep inside the caller until a rate limit resets and
wait forever on a stuck connection. A worker must not do either: every call
here has a timeout; only an idempotent call that failed in transit is retried
in place, a few times within seconds; any other failure surfaces as
`GitHubError` (with `retry_after` when GitHub asked us to back off), so the
job queue can re-queue with a delay. Once GitHub says the rate limit is
exhausted, the client makes no call until the reset.

Every GET is conditional (app/github/etags.py), so unchanged answers come back as
304s, which do not count against the rate limit. Outside `async with gh:`
githubkit opens a new HTTP client per request; a unit of work (a job, a
verification) runs inside one, so its requests share keep-alive connections.
One SSL context serves every client: building one costs ~30 ms of CPU.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib
import json
import re
import urllib.parse
import weakref
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Any

import httpx
import jwt
import pydantic
from cryptography.hazmat.primitives import serialization
from githubkit import AppAuthStrategy, AppInstallationAuthStrategy, GitHub, TokenAuthStrategy
from githubkit.auth.app import AppAuth
from githubkit.cache import MemCacheStrategy
from githubkit.exception import GitHubException, RateLimitExceeded, RequestFailed, RequestTimeout

from checks import memo

from .backoff import RateLimitGate, RetryTransient, wait_seconds
from .etags import ConditionalTransport, EtagStore
from .lru import SizedLru


def http_timeout(seconds: float) -> httpx.Timeout:
    """`seconds` for a call to answer, of which connecting may take at most 5."""
    return httpx.Timeout(seconds, connect=min(5.0, seconds))


DEFAULT_TIMEOUT = http_timeout(15.0)
USER_AGENT = "signoff-bot"
RETRY_TRANSIENT = RetryTransient()


class GitHubError(Exception):
    """A GitHub call that failed; `retry_after` is seconds to wait when GitHub asked us to back off."""

    def __init__(self, message: str, status: int | None = None, retry_after: float | None = None):
        super().__init__(message)
        self.status = status
        self.retry_after = retry_after

    @property
    def transient(self) -> bool:
        """Worth retrying later: rate limits, server errors, timeouts, dropped connections."""
        return self.retry_after is not None or self.status is None or self.status >= 500

    @property
    def rate_limited(self) -> bool:
        """GitHub's rate limit (primary or secondary) is exhausted until `retry_after` seconds from now."""
        return self.status in (403, 429) and self.retry_after is not None


@dataclass
class CallStats:
    """Requests made through one client, for metrics and the replay/bench reports."""

    requests: int = 0
    by_route: dict[str, int] = field(default_factory=dict)
    rate_limit_remaining: int | None = None

    async def on_request(self, request: httpx.Request) -> None:
        self.requests += 1
        key = f"{request.method} {request.url.path}"
        self.by_route[key] = self.by_route.get(key, 0) + 1

    async def on_response(self, response: httpx.Response) -> None:
        remaining = response.headers.get("x-ratelimit-remaining")
        if remaining is not None and remaining.isdigit():
            self.rate_limit_remaining = int(remaining)


KEPT_BYTES = 64 * 1024 * 1024


class ConditionalGitHub(GitHub):
    """githubkit's client with conditional requests of its own (app/github/etags.py) in place of githubkit's HTTP
    cache, and `kept`: what never changes (blobs by SHA, files at a commit, artifacts), kept by
    app/github/gather.py across verifications so that the next one need not ask for it at all."""

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, http_cache=False, **kwargs)
        self.etags = EtagStore()
        self.kept: SizedLru = SizedLru(KEPT_BYTES)

    async def _create_async_client(self) -> httpx.AsyncClient:
        # githubkit's own method, with the transport wrapped as githubkit wraps it for hishel
        return _ConditionalClient(**self._get_client_defaults(), transport=self.config.async_transport,
                                  event_hooks=self.config.async_event_hooks, etags=self.etags)


class _ConditionalClient(httpx.AsyncClient):
    def __init__(self, *args, etags: EtagStore, **kwargs) -> None:
        self._etags = etags  # before super().__init__, which builds the transport
        super().__init__(*args, **kwargs)

    def _init_transport(self, *args, **kwargs) -> httpx.AsyncBaseTransport:
        return ConditionalTransport(super()._init_transport(*args, **kwargs), self._etags)


@memo.reading(maxsize=1)
def _ssl_context():
    """The system's CA certificates, read once (tens of ms), shared by every client."""
    return httpx.create_ssl_context()


def client(auth, base_url: str, stats: CallStats | None = None, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> GitHub:
    """A githubkit client for `base_url` (GitHub, GitHub Enterprise or the fake server)."""
    gate = RateLimitGate(GitHubError)
    hooks = {"request": [stats.on_request] if stats else [],
             "response": ([stats.on_response] if stats else []) + [gate.observe]}
    return ConditionalGitHub(
        auth,
        base_url=base_url.rstrip("/") + "/",
        timeout=timeout,
        auto_retry=RETRY_TRANSIENT,
        throttler=gate,
        user_agent=USER_AGENT,
        async_event_hooks=hooks,
        trust_env=False,
        ssl_verify=_ssl_context(),
        # The client's own token and JWT: githubkit's default cache is the process's, keyed without the
        # server, so a client would take another's token for the same installation id at another server.
        cache_strategy=MemCacheStrategy(),
    )


def app_client(app_id: int | str, private_key: str, base_url: str, stats: CallStats | None = None,
               timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> GitHub:
    return client(AppAuthStrategy(str(app_id), private_key), base_url, stats, timeout)


def installation_client(app_id: int | str, private_key: str, installation_id: int, base_url: str,
                        stats: CallStats | None = None, timeout: httpx.Timeout = DEFAULT_TIMEOUT) -> GitHub:
    """A client acting as the app's installation; githubkit caches the token until shortly before expiry."""
    return client(InstallationAuth(str(app_id), private_key, installation_id), base_url, stats, timeout)


@dataclass
class InstallationAuth(AppInstallationAuthStrategy):
    """githubkit's installation auth, asking for a token once however many requests need one at once
    (githubkit's own asks once per request until the first answer is cached: a verification's first wave
    would fetch a token per request)."""

    def __post_init__(self) -> None:
        super().__post_init__()
        self._locks: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Lock] = \
            weakref.WeakKeyDictionary()
        self.signing_key = _signing_key(self.private_key)

    def token_lock(self) -> asyncio.Lock:
        """This event loop's lock (an asyncio.Lock may serve only one loop; a client may outlive one)."""
        loop = asyncio.get_running_loop()
        if loop not in self._locks:
            self._locks[loop] = asyncio.Lock()
        return self._locks[loop]

    def get_auth_flow(self, github) -> httpx.Auth:
        return _OneTokenAuth(self.token_lock, self.signing_key, github, self.app_id, self.private_key, self.client_id,
                             self.client_secret, self.installation_id, self.repositories, self.repository_ids,
                             self.permissions)


@memo.reading(maxsize=16)
def _signing_key(pem: str) -> Any:
    """The App's private key, parsed once: parsing an RSA key checks it, which costs more CPU (tens of ms) than
    signing with it; githubkit would parse it for every JWT. None if it does not parse (githubkit then
    fails on it as it would)."""
    try:
        return serialization.load_pem_private_key(pem.encode(), password=None)
    except (ValueError, TypeError):
        return None


class _OneTokenAuth(AppAuth):
    def __init__(self, token_lock, signing_key: Any, *args) -> None:
        super().__init__(*args)
        self._token_lock = token_lock
        self._signing_key = signing_key

    def _create_jwt(self) -> str:
        if self._signing_key is None:
            return super()._create_jwt()
        now = datetime.now(timezone.utc) - timedelta(minutes=1)  # githubkit's claims, clock drift allowed
        return jwt.encode({"iss": self.issuer, "iat": now, "exp": now + timedelta(minutes=10)}, self._signing_key,
                          algorithm="RS256")

    async def async_auth_flow(self, request: httpx.Request) -> AsyncGenerator[httpx.Request, httpx.Response]:
        flow = super().async_auth_flow(request)
        async with self._token_lock():  # held while a token is asked for; a cached one is taken at once
            step = await flow.__anext__()
            while step is not request:  # the token request, then the request with the token
                step = await flow.asend((yield step))
        while True:
            response = yield step
            try:
                step = await flow.asend(response)
            except StopAsyncIteration:
                return


def token_client(token: str, base_url: str, stats: CallStats | None = None) -> GitHub:
    return client(TokenAuthStrategy(token), base_url, stats)


# The GitHub Actions app on github.com: what a workflow's GITHUB_TOKEN writes (check runs, statuses) is its.
ACTIONS_APP_ID = 15368


@dataclass
class WorkflowTokenAuth(TokenAuthStrategy):
    """A plain token (a workflow's GITHUB_TOKEN, or a person's): `app_id` is the app whose check runs it writes
    and whose records it reads (`app_id_of`: GitHub Actions for a workflow token); such a token cannot read
    organisation team membership, so GitHub's 404 there means "unknown", not "not a member"
    (`reads_teams`)."""

    app_id: int = ACTIONS_APP_ID
    reads_teams: bool = False


def reads_teams(gh: GitHub) -> bool:
    """Whether the client's 404 on a team membership means "not a member" (an App with members: read)."""
    return getattr(gh.auth, "reads_teams", True)


def write_wave(gh: GitHub) -> contextlib.AbstractAsyncContextManager[None]:
    """Send the writes made within as one wave, alone among the installation's writes (app/github/backoff.py)."""
    gate = gh.config.throttler
    return gate.wave() if isinstance(gate, RateLimitGate) else contextlib.nullcontext()


# githubkit imports a REST namespace, and builds the pydantic models of an answer or a body, on first use:
# well over 100 ms of CPU in a verification's first waves. `warm_up` does it when the process starts.
NAMESPACES = ("actions", "apps", "checks", "git", "issues", "pulls", "reactions", "repos", "teams")
MODELS = (
    "InstallationToken", "AppInstallationsInstallationIdAccessTokensPostBody", "BasicError", "ValidationError",
    "ValidationErrorSimple", "PullRequest", "DiffEntry", "Commit", "IssueComment", "PullRequestReview",
    "PullRequestReviewComment", "BranchWithProtection", "GitTree", "Blob", "ContentFile", "ContentDirectoryItems",
    "ContentSubmodule", "ContentSymlink", "ReposOwnerRepoCommitsRefCheckRunsGetResponse200", "CheckRun",
    "WorkflowRun", "ReposOwnerRepoActionsRunsRunIdArtifactsGetResponse200", "TeamMembership",
    "RepositoryCollaboratorPermission", "FullRepository", "Status", "ReposOwnerRepoStatusesShaPostBody",
    "ReposOwnerRepoIssuesIssueNumberCommentsPostBody", "ReposOwnerRepoPullsPullNumberReviewsPostBody",
    "ReposOwnerRepoCheckRunsPostBodyOneof0", "ReposOwnerRepoCheckRunsPostBodyOneof1", "EventsGetResponse503",
)


ASYNC_IO = ("anyio._backends._asyncio", "anyio.streams.tls", "concurrent.futures.thread")


def warm_up() -> None:
    """Import what githubkit would import on the first calls of the first client (once per process)."""
    models = importlib.import_module("githubkit_schemas.latest.models")
    for name in MODELS:
        getattr(models, name)
    gh = GitHub("warm-up")
    for namespace in NAMESPACES:
        getattr(gh.rest, namespace)
    httpx.AsyncHTTPTransport(verify=_ssl_context())  # httpcore, and the one SSL context
    for module in ASYNC_IO:  # what httpcore imports on its first connection (~40 ms)
        importlib.import_module(module)


def app_id_of(gh: GitHub) -> int | None:
    """The id of the GitHub App a client acts for (from its credentials); None for a user's token."""
    app_id = getattr(gh.auth, "app_id", None)
    return int(app_id) if app_id is not None else None


_NAME = re.compile(r"[A-Za-z0-9_.-]{1,100}(?:\[bot\])?")  # an owner, repository, team slug or login


def is_name(text: str) -> bool:
    """Whether `text` may be a GitHub owner, repository, team slug or login: a value read from a PR that is
    not one never reaches a URL (a control character made an invalid URL, answered as a 502 and retried)."""
    return _NAME.fullmatch(text) is not None and text not in (".", "..")


_UNREQUESTABLE = re.compile(r"[\x00-\x1f\x7f?#]")


def url_path(path: str) -> str | None:
    """A repository path as one part of a URL, percent-encoded (GitHub decodes it back); None for a path no
    request can name: empty, or with a control character, "?" or "#". githubkit decodes the URL's path again
    to sign the request, and httpx then refuses it (it was answered as a GitHub 502 and retried), or reads a
    query or a fragment into it."""
    if not path or _UNREQUESTABLE.search(path):
        return None
    return urllib.parse.quote(path, safe="/")


def as_github_error(exc: Exception, what: str) -> GitHubError:
    """Describe a githubkit/httpx/pydantic failure as one GitHubError, without secrets.

    Anything else is our own bug, not GitHub's: it is raised again as it is, with its traceback, so the
    worker logs it and ends the job once (a TypeError retried eight times as "malformed GitHub response"
    hid bugs)."""
    if isinstance(exc, GitHubError):
        return exc
    if isinstance(exc, RateLimitExceeded):
        return GitHubError(f"{what}: rate limited", exc.response.status_code,
                           max(1.0, exc.retry_after.total_seconds()))
    if isinstance(exc, RequestFailed):
        status = exc.response.status_code
        raw = exc.response.raw_response
        return GitHubError(f"{what}: GitHub answered {status}", status, wait_seconds(status, raw.headers, _text(raw)))
    if isinstance(exc, RequestTimeout):
        return GitHubError(f"{what}: timed out")
    if isinstance(exc, (httpx.TransportError, GitHubException)):
        return GitHubError(f"{what}: {type(exc).__name__}")
    if isinstance(exc, (pydantic.ValidationError, json.JSONDecodeError)):  # a body without what GitHub promises
        return GitHubError(f"{what}: malformed GitHub response ({type(exc).__name__})", status=502)
    raise exc


def _text(response: httpx.Response) -> str:
    """The body of an error answer ("" if it was streamed and never read)."""
    try:
        return response.text
    except httpx.ResponseNotRead:
        return ""


async def call(what: str, fn, *args, **kw):
    """Await one githubkit call; any failure becomes a GitHubError that says `what` failed."""
    try:
        return await fn(*args, **kw)
    except Exception as exc:  # noqa: BLE001 - every failure becomes one GitHubError
        raise as_github_error(exc, what) from None


PER_PAGE = 100  # GitHub's largest page


async def pages(what: str, fn, *args, key: str | None = None, limit: int | None = None, **kw) -> list:
    """Every item of a list GitHub paginates, following `Link: rel="next"` (`key`: the field of a wrapped
    list, e.g. "check_runs"), or the first pages holding at least `limit` items."""
    items: list = []
    page = 1
    while True:
        resp = await call(what, fn, *args, per_page=PER_PAGE, page=page, **kw)
        try:
            data = resp.parsed_data
            chunk = list(getattr(data, key)) if key else list(data)
        except Exception as exc:  # noqa: BLE001 - a missing required field raises only here
            raise as_github_error(exc, what) from None
        items.extend(chunk)
        if (limit is not None and len(items) >= limit) or 'rel="next"' not in resp.headers.get("link", "") \
                or not chunk:
            return items
        page += 1
