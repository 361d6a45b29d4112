"""`POST /graphql`: GitHub's GraphQL API, over the objects the fake models (app/fake_github/graphql_objects.py)."""

from __future__ import annotations

from fastapi import APIRouter

from ..graphql import execute
from ..graphql_objects import query_root
from .common import C, GitHubError, json_body, respond

router = APIRouter()
DOCS = "https://docs.github.com/graphql/guides/forming-calls-with-graphql#authenticating-with-graphql"


@router.post("/graphql")
async def graphql(ctx: C):
    """A query answers 200 with `data` and/or `errors`, as GitHub answers it; anonymous calls are refused."""
    if ctx.actor.kind == "anonymous":
        return respond({"message": "This endpoint requires you to be authenticated.", "documentation_url": DOCS},
                       401)
    data = await json_body(ctx.request)
    query, variables = data.get("query"), data.get("variables") or {}
    if not isinstance(query, str) or not isinstance(variables, dict):
        raise GitHubError(400, "A query attribute must be specified and must be a string.")
    with ctx.state.lock:
        answer = execute(query, variables, query_root(ctx.state, ctx.site.api))
    return respond(answer)
