"""GitHub-shaped JSON for accounts, repositories and apps.

Every builder returns what GitHub's REST API returns, with at least every field
the OpenAPI schema marks required, so githubkit's models validate it. URLs of
API resources point at this server (clients follow them); `html_url`s point at
github.com, as the bot links to them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .ids import node_id, stable_id
from .state import GitHubState, RepoState

HTML = "https://github.com"
ACTIONS_APP_ID = 15368
REACTIONS = ("+1", "-1", "laugh", "confused", "heart", "hooray", "rocket", "eyes")
ROLES = ("none", "read", "triage", "write", "maintain", "admin")
CREATED = "2020-01-01T00:00:00Z"  # when repositories, users and apps "were created"

_REPO_URLS = {
    "archive_url": "/{archive_format}{/ref}", "assignees_url": "/assignees{/user}",
    "blobs_url": "/git/blobs{/sha}", "branches_url": "/branches{/branch}",
    "collaborators_url": "/collaborators{/collaborator}", "comments_url": "/comments{/number}",
    "commits_url": "/commits{/sha}", "compare_url": "/compare/{base}...{head}",
    "contents_url": "/contents/{+path}", "contributors_url": "/contributors",
    "deployments_url": "/deployments", "downloads_url": "/downloads", "events_url": "/events",
    "forks_url": "/forks", "git_commits_url": "/git/commits{/sha}", "git_refs_url": "/git/refs{/sha}",
    "git_tags_url": "/git/tags{/sha}", "hooks_url": "/hooks", "issue_comment_url": "/issues/comments{/number}",
    "issue_events_url": "/issues/events{/number}", "issues_url": "/issues{/number}", "keys_url": "/keys{/key_id}",
    "labels_url": "/labels{/name}", "languages_url": "/languages", "merges_url": "/merges",
    "milestones_url": "/milestones{/number}", "notifications_url": "/notifications{?since,all,participating}",
    "pulls_url": "/pulls{/number}", "releases_url": "/releases{/id}", "stargazers_url": "/stargazers",
    "statuses_url": "/statuses/{sha}", "subscribers_url": "/subscribers", "subscription_url": "/subscription",
    "tags_url": "/tags", "teams_url": "/teams", "trees_url": "/git/trees{/sha}",
}


@dataclass(frozen=True)
class Site:
    """The state a response describes and the API base URL its links point to."""

    state: GitHubState
    api: str

    def repo_api(self, repo: RepoState) -> str:
        return f"{self.api}/repos/{repo.full_name}"

    @property
    def epoch(self) -> str:
        return self.state.epoch


def user_type(state: GitHubState, login: str) -> str:
    if login.endswith("[bot]"):
        return "Bot"
    low = login.lower()
    orgs = {r.owner.lower() for r in state.repos.values()} | {t.split("/")[0].lower() for t in state.teams}
    return "Organization" if low in orgs else "User"


def user(site: Site, login: str) -> dict[str, Any]:
    """A SimpleUser."""
    uid = stable_id("user", login.lower())
    base = f"{site.api}/users/{login}"
    kind = user_type(site.state, login)
    html = f"{HTML}/apps/{login.removesuffix('[bot]')}" if kind == "Bot" else f"{HTML}/{login}"
    return {
        "login": login, "id": uid, "node_id": node_id("Bot" if kind == "Bot" else kind, uid),
        "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4", "gravatar_id": "",
        "url": base, "html_url": html, "followers_url": f"{base}/followers",
        "following_url": f"{base}/following{{/other_user}}", "gists_url": f"{base}/gists{{/gist_id}}",
        "starred_url": f"{base}/starred{{/owner}}{{/repo}}", "subscriptions_url": f"{base}/subscriptions",
        "organizations_url": f"{base}/orgs", "repos_url": f"{base}/repos", "events_url": f"{base}/events{{/privacy}}",
        "received_events_url": f"{base}/received_events", "type": kind, "user_view_type": "public",
        "site_admin": False,
    }


def public_user(site: Site, login: str) -> dict[str, Any]:
    """GET /users/{username}: a PublicUser."""
    return {**user(site, login), "name": None, "company": None, "blog": "", "location": None, "email": None,
            "hireable": None, "bio": None, "twitter_username": None, "public_repos": 0, "public_gists": 0,
            "followers": 0, "following": 0, "created_at": CREATED, "updated_at": CREATED}


def organization(site: Site, login: str) -> dict[str, Any]:
    """The `organization` of a delivery about an organization's repository."""
    uid = stable_id("user", login.lower())
    base = f"{site.api}/orgs/{login}"
    return {"login": login, "id": uid, "node_id": node_id("Organization", uid), "url": base,
            "repos_url": f"{base}/repos", "events_url": f"{base}/events", "hooks_url": f"{base}/hooks",
            "issues_url": f"{base}/issues", "members_url": f"{base}/members{{/member}}",
            "public_members_url": f"{base}/public_members{{/member}}",
            "avatar_url": f"https://avatars.githubusercontent.com/u/{uid}?v=4", "description": None}


def repository(site: Site, repo: RepoState) -> dict[str, Any]:
    """A FullRepository (a superset of Repository, MinimalRepository and the webhooks' repository)."""
    api = site.repo_api(repo)
    html = f"{HTML}/{repo.full_name}"
    data: dict[str, Any] = {
        "id": repo.id, "node_id": node_id("Repository", repo.id), "name": repo.name, "full_name": repo.full_name,
        "private": False, "owner": user(site, repo.owner), "html_url": html, "description": None, "fork": False,
        "url": api,
    }
    data.update({key: api + suffix for key, suffix in _REPO_URLS.items()})
    data.update({
        "git_url": f"git://github.com/{repo.full_name}.git", "ssh_url": f"git@github.com:{repo.full_name}.git",
        "clone_url": f"{html}.git", "svn_url": html, "mirror_url": None, "homepage": None, "language": None,
        "forks_count": 0, "forks": 0, "stargazers_count": 0, "watchers_count": 0, "watchers": 0, "size": 0,
        "default_branch": repo.default_branch, "open_issues_count": 0, "open_issues": 0, "is_template": False,
        "topics": [], "has_issues": True, "has_projects": True, "has_wiki": True, "has_pages": False,
        "has_downloads": True, "has_discussions": False, "archived": False, "disabled": False,
        "visibility": "public", "pushed_at": site.epoch, "created_at": CREATED, "updated_at": site.epoch,
        "allow_forking": True, "web_commit_signoff_required": False, "license": None,
        "subscribers_count": 0, "network_count": 0, "custom_properties": {},
    })
    return data


def integration(site: Site, app_id: int | None = None) -> dict[str, Any]:
    """A GitHub App: the bot's own (`app_id` None or the state's), GitHub Actions (ACTIONS_APP_ID),
    or another app (any other id: a world may give a check run one)."""
    if app_id == ACTIONS_APP_ID:
        slug, name, owner = "github-actions", "GitHub Actions", "github"
        permissions = {"actions": "write", "checks": "write", "contents": "write", "metadata": "read",
                       "pull_requests": "write", "statuses": "write"}
        events = ["check_run", "check_suite", "pull_request", "push", "workflow_run"]
    elif app_id not in (None, site.state.app_id):
        slug = name = f"another-app-{app_id}"
        owner = app_owner(site.state)
        permissions = {"checks": "write", "metadata": "read"}
        events = ["check_run", "check_suite"]
    else:
        app_id = site.state.app_id
        slug, name, owner = site.state.app_slug, site.state.app_slug, app_owner(site.state)
        permissions = {"actions": "read", "checks": "write", "contents": "read", "issues": "write",
                       "members": "read", "metadata": "read", "pull_requests": "write", "statuses": "write"}
        events = ["check_run", "check_suite", "issue_comment", "pull_request", "pull_request_review",
                  "pull_request_review_comment", "workflow_run"]
    return {
        "id": app_id, "slug": slug, "node_id": node_id("Integration", app_id), "client_id": f"Iv1.{app_id:016x}",
        "owner": user(site, owner), "name": name, "description": "", "external_url": f"{HTML}/apps/{slug}",
        "html_url": f"{HTML}/apps/{slug}", "created_at": CREATED, "updated_at": CREATED,
        "permissions": permissions, "events": events,
    }


def app_owner(state: GitHubState) -> str:
    """Who owns the bot's app: the owner of the first repository it is installed on."""
    installed = [r for r in state.repos.values() if r.installation_id is not None]
    return installed[0].owner if installed else state.app_slug


def installation(site: Site, installation_id: int, repos: list[RepoState]) -> dict[str, Any]:
    account = repos[0].owner
    app = integration(site)
    return {
        "id": installation_id, "account": user(site, account), "repository_selection": "selected",
        "access_tokens_url": f"{site.api}/app/installations/{installation_id}/access_tokens",
        "repositories_url": f"{site.api}/installation/repositories",
        "html_url": f"{HTML}/organizations/{account}/settings/installations/{installation_id}",
        "app_id": app["id"], "app_slug": app["slug"], "client_id": app["client_id"],
        "target_id": stable_id("user", account.lower()), "target_type": user_type(site.state, account),
        "permissions": app["permissions"], "events": app["events"], "created_at": CREATED, "updated_at": CREATED,
        "single_file_name": None, "has_multiple_single_files": False, "single_file_paths": [],
        "suspended_by": None, "suspended_at": None,
    }


def installation_token(site: Site, token: str, expires_at: str) -> dict[str, Any]:
    return {"token": token, "expires_at": expires_at, "permissions": integration(site)["permissions"],
            "repository_selection": "selected"}


def label(site: Site, repo: RepoState, name: str) -> dict[str, Any]:
    lid = stable_id("label", f"{repo.full_name.lower()}:{name}")
    return {"id": lid, "node_id": node_id("Label", lid), "url": f"{site.repo_api(repo)}/labels/{name}",
            "name": name, "description": None, "color": "ededed", "default": False, "archived_by": None}


def reaction_rollup(url: str, reactions: list[dict[str, Any]]) -> dict[str, Any]:
    counts = {k: sum(1 for r in reactions if r["content"] == k) for k in REACTIONS}
    return {"url": url, "total_count": len(reactions), **counts}


def team_membership(site: Site, org: str, slug: str, login: str) -> dict[str, Any]:
    team_id = stable_id("team", f"{org}/{slug}".lower())
    return {"url": f"{site.api}/teams/{team_id}/memberships/{login}", "role": "member", "state": "active"}


def collaborator_permission(site: Site, repo: RepoState, login: str) -> dict[str, Any]:
    """GET .../collaborators/{username}/permission: `permission` in GitHub's legacy
    vocabulary (admin|write|read|none), `role_name` the actual role."""
    role = site.state.permission(repo, login)
    legacy = {"admin": "admin", "maintain": "write", "write": "write", "triage": "read",
              "read": "read"}.get(role, "none")
    rank = ROLES.index(role) if role in ROLES else 0
    perms = {"pull": rank >= 1, "triage": rank >= 2, "push": rank >= 3, "maintain": rank >= 4, "admin": rank >= 5}
    return {"permission": legacy, "role_name": role,
            "user": {**user(site, login), "permissions": perms, "role_name": role}}


def rate_limit(used: int, limit: int, reset: int) -> dict[str, Any]:
    core = {"limit": limit, "remaining": max(limit - used, 0), "reset": reset, "used": used, "resource": "core"}
    fresh = {"limit": limit, "remaining": limit, "reset": reset, "used": 0}
    resources = {"core": core, "search": {**fresh, "limit": 30, "remaining": 30, "resource": "search"},
                 "graphql": {**fresh, "resource": "graphql"},
                 "integration_manifest": {**fresh, "resource": "integration_manifest"}}
    return {"resources": resources, "rate": core}


def timestamp(value: Any, default: str) -> str:
    """A stored timestamp, or `default` when the world gives none."""
    return str(value) if value else default
