"""Who a request acts as, the way GitHub decides it from the Authorization header.

- `user:<login>` (as `token …` or `Bearer …`) acts as that user; tests use it
  to comment, review and edit as people in the world.
- an installation token issued by `POST /app/installations/{id}/access_tokens`
  acts as the app (its bot user `signoff-bot[bot]`).
- a JWT (three base64url segments; the signature is not checked) acts as the
  app itself and is accepted only on the app routes, as on GitHub.
- a plain token the state was given (`GitHubState.plain_tokens`: by world,
  `tokens:`, or `--token`) acts as a workflow's GITHUB_TOKEN: the GitHub
  Actions app's installation token, `github-actions[bot]`, allowed the
  writes its permissions name and refused the others with 403, as GitHub
  refuses them ("Resource not accessible by integration"); without
  `members` it cannot read organisation team membership (404).
- no header: anonymous, read-only, like reading a public repository.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from dataclasses import dataclass
from typing import Literal

from .payloads import ACTIONS_APP_ID
from .state import GitHubState, PlainToken

WORKFLOW_LOGIN = "github-actions[bot]"

_B64URL = re.compile(r"^[A-Za-z0-9_-]+={0,2}$")


class AuthError(Exception):
    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class Actor:
    kind: Literal["anonymous", "user", "installation", "app", "workflow"]
    login: str | None = None
    installation_id: int | None = None
    app_id: int | None = None
    plain: PlainToken | None = None  # a workflow token's permissions

    @property
    def is_app(self) -> bool:
        return self.kind in ("installation", "app", "workflow")

    @property
    def label(self) -> str:
        return self.login or self.kind


def resolve(state: GitHubState, authorization: str | None) -> Actor:
    """The actor of a request, or AuthError(401) for credentials GitHub would reject."""
    if not authorization:
        return Actor("anonymous")
    scheme, _, credential = authorization.strip().partition(" ")
    credential = credential.strip()
    if scheme.lower() not in ("token", "bearer") or not credential:
        raise AuthError(401, "Bad credentials")
    if credential.startswith("user:") and len(credential) > 5:
        return Actor("user", credential[5:])
    plain = state.plain_tokens.get(credential)
    if plain is not None:
        return Actor("workflow", WORKFLOW_LOGIN, None, ACTIONS_APP_ID, plain)
    token = state.token(credential)
    if token is not None:
        return Actor("installation", state.bot_login, token.installation_id, token.app_id)
    app_id = jwt_issuer(credential)
    if app_id is not None:
        return Actor("app", state.bot_login, None, app_id if app_id > 0 else state.app_id)
    raise AuthError(401, "Bad credentials")


def jwt_issuer(credential: str) -> int | None:
    """The app id a JWT claims (`iss`), 0 when it names none; None when `credential` is no JWT."""
    parts = credential.split(".")
    if len(parts) != 3 or not all(_B64URL.match(p) for p in parts):
        return None
    try:
        claims = json.loads(base64.urlsafe_b64decode(parts[1] + "=" * (-len(parts[1]) % 4)))
    except (binascii.Error, ValueError):
        return None
    issuer = claims.get("iss") if isinstance(claims, dict) else None
    return int(issuer) if str(issuer).isdigit() else 0


# What a workflow token needs for a request (method, path): the permission GitHub checks, as
# (name, the permission that also grants it: a comment on a pull request is also a pull-requests write).
_NEEDS: tuple[tuple[str, re.Pattern[str], str, str], ...] = (
    ("POST", re.compile(r"^/repos/[^/]+/[^/]+/check-runs$"), "checks", ""),
    ("PATCH", re.compile(r"^/repos/[^/]+/[^/]+/check-runs/\d+$"), "checks", ""),
    ("POST", re.compile(r"^/repos/[^/]+/[^/]+/statuses/[^/]+$"), "statuses", ""),
    ("POST", re.compile(r"^/repos/[^/]+/[^/]+/issues/\d+/comments$"), "issues", "pull_requests"),
    ("PATCH", re.compile(r"^/repos/[^/]+/[^/]+/issues/comments/\d+$"), "issues", "pull_requests"),
    ("POST", re.compile(r"^/repos/[^/]+/[^/]+/issues/comments/\d+/reactions$"), "issues", "pull_requests"),
    ("POST", re.compile(r"^/repos/[^/]+/[^/]+/pulls/\d+/(reviews|comments)$"), "pull_requests", ""),
    ("PATCH", re.compile(r"^/repos/[^/]+/[^/]+/pulls/comments/\d+$"), "pull_requests", ""),
    ("GET", re.compile(r"^/orgs/[^/]+/teams/[^/]+/memberships/[^/]+$"), "members", ""),
)


def refused(actor: Actor, method: str, path: str) -> AuthError | None:
    """Why GitHub refuses a workflow token this request (a permission it was not given), else None."""
    if actor.plain is None:
        return None
    for verb, pattern, permission, also in _NEEDS:
        if verb == method and pattern.match(path) and not ({permission, also} & actor.plain.permissions):
            if permission == "members":  # GitHub hides an organisation's teams from a token that cannot read them
                return AuthError(404, "Not Found")
            return AuthError(403, "Resource not accessible by integration")
    return None
