"""A fake GitHub REST API served from world fixtures (see WORLD_FORMAT.md).

`FakeGitHub(*world_dirs)` runs it on 127.0.0.1 in a background thread for tests
(`.url`, `.state`, `.fault(...)`, `.set_webhook(...)`, `.wait_deliveries(n)`);
`main(argv)` runs it standalone (`signoff-bot fake-github WORLD_DIR… --port P`);
`create_app(worlds)` is the ASGI app itself, its state at `app.state.github`.

Auth: `user:<login>` tokens act as that user; installation tokens from
`POST /app/installations/{id}/access_tokens` (any well-formed JWT) act as the
app, `signoff-bot[bot]`; a plain token given by a world (`tokens:`) or `--token`
acts as a workflow's GITHUB_TOKEN, `github-actions[bot]`, within its permissions
(a wrong one is refused with 401); no token reads anonymously.

Admin routes for tests and demos:
  POST   /_fake/deliver        {"repo", "event", "id"[, "action", "delivery", "url"]} a stored object as a webhook
                               (check_suite: the suite of the check run `id`)
  POST   /_fake/redeliver      {"delivery"[, "url"]} an earlier delivery again, same GUID and payload
  POST   /_fake/push           {"repo", "number", "sha"} move a PR's head, deliver pull_request synchronize
  POST   /_fake/complete-run   {"repo", "id", "conclusion"} complete a run, deliver workflow_run completed
  GET    /_fake/writes[?all=1] the app's writes (all=1: users' too)
  GET    /_fake/calls[?since=N] every API call: method, path, route, status, actor, started, finished, job
  GET    /_fake/deliveries     webhook deliveries and the app's answers
  GET|POST|DELETE /_fake/faults  pending faults; add one, {"faults": [...]} and/or {"latency_ms": N}; clear
  GET|DELETE /_fake/stats      request counts ({"requests", "rate_limited", "not_modified", "by_route"}); reset
                               (the call log too)
"""

from .faults import Fault
from .runner import FakeGitHub, main
from .server import create_app
from .state import GitHubState, WorldConflict

__all__ = ["FakeGitHub", "Fault", "GitHubState", "WorldConflict", "create_app", "main"]
