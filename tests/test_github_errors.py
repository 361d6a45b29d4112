"""What counts as GitHub's failure (retried, said as a GitHubError) and what is our own bug (raised as it is)."""

from __future__ import annotations

import asyncio
import json
import traceback

import httpx
import pydantic
import pytest

from app.github.client import GitHubError, call


def run(fn):
    return asyncio.run(call("pull #1", fn))


def test_a_bug_in_our_code_is_raised_as_it_is_with_its_traceback():
    async def buggy():
        return len(None)  # a TypeError of ours, raised inside a GitHub call site

    with pytest.raises(TypeError) as caught:
        run(buggy)
    assert "buggy" in "".join(traceback.format_tb(caught.value.__traceback__))


def test_a_transport_failure_is_a_transient_github_error():
    async def dropped():
        raise httpx.ConnectError("connection reset")

    with pytest.raises(GitHubError) as caught:
        run(dropped)
    assert caught.value.transient and "pull #1: ConnectError" in str(caught.value)


@pytest.mark.parametrize("exc", [
    pydantic.ValidationError.from_exception_data("PullRequest", []),
    json.JSONDecodeError("Expecting value", "<html>", 0),
])
def test_a_body_without_what_github_promises_is_a_malformed_response(exc):
    async def malformed():
        raise exc

    with pytest.raises(GitHubError) as caught:
        run(malformed)
    assert caught.value.status == 502 and "malformed GitHub response" in str(caught.value)
