"""Conditional requests (app/github/etags.py): a repeated GET carries If-None-Match and a 304 yields the stored answer."""

from __future__ import annotations

import asyncio
import hashlib
import json

import httpx

from app.fake_github import FakeGitHub
from app.github.client import installation_client
from app.github.etags import ConditionalTransport, EtagStore, Stored
from app.offline.replay import DEMO_WORLD, REPLAY_APP_ID, throwaway_key
from app.offline.world import World


class Server:
    """A stand-in origin: JSON bodies with weak ETags, as GitHub sends them; records what it was sent."""

    def __init__(self) -> None:
        self.bodies: dict[str, bytes] = {"/a": b'{"v": 1}', "/zip": b"PK..."}
        self.sent: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.sent.append(request)
        body = self.bodies.get(request.url.path)
        if body is None:
            return httpx.Response(404, json={"message": "Not Found"})
        etag = f'W/"{hashlib.sha256(body).hexdigest()[:16]}"'
        kind = "application/zip" if request.url.path == "/zip" else "application/json; charset=utf-8"
        headers = {"etag": etag, "x-ratelimit-remaining": str(5000 - len(self.sent))}
        if request.headers.get("if-none-match") == etag:
            return httpx.Response(304, headers=headers)
        return httpx.Response(200, headers={**headers, "content-type": kind}, content=body)


def client(server: Server, store: EtagStore | None = None) -> httpx.AsyncClient:
    transport = ConditionalTransport(httpx.MockTransport(server), store or EtagStore())
    return httpx.AsyncClient(transport=transport, base_url="https://api.example")


def gets(server: Server, *paths: str, store: EtagStore | None = None) -> list[httpx.Response]:
    async def run() -> list[httpx.Response]:
        async with client(server, store) as c:
            return [await c.get(p) for p in paths]
    return asyncio.run(run())


def test_a_repeated_get_is_conditional_and_a_304_returns_the_stored_answer():
    server = Server()
    first, second = gets(server, "/a", "/a")
    assert "if-none-match" not in server.sent[0].headers
    assert server.sent[1].headers["if-none-match"] == first.headers["etag"]
    assert second.status_code == 200 and second.json() == {"v": 1}
    assert second.headers["x-ratelimit-remaining"] == "4998"  # the 304's fresh headers


def test_a_changed_resource_is_stored_again_and_its_new_etag_sent():
    server = Server()
    store = EtagStore()
    gets(server, "/a", store=store)
    server.bodies["/a"] = b'{"v": 2}'
    changed, again = gets(server, "/a", "/a", store=store)
    assert changed.json() == again.json() == {"v": 2}
    assert server.sent[-1].headers["if-none-match"] == changed.headers["etag"]


def test_only_json_answers_to_gets_are_kept():
    server = Server()

    async def run() -> None:
        async with client(server) as c:
            await c.get("/zip")
            await c.get("/zip")
            await c.post("/a", content=b"{}")
            await c.get("/a")
            await c.post("/a", content=b"{}")
    asyncio.run(run())
    assert "if-none-match" not in server.sent[1].headers
    assert "if-none-match" not in server.sent[4].headers


def test_an_error_drops_the_stored_answer():
    server = Server()
    store = EtagStore()
    gets(server, "/a", store=store)
    del server.bodies["/a"]
    (missing,) = gets(server, "/a", store=store)
    assert missing.status_code == 404
    server.bodies["/a"] = b'{"v": 1}'
    gets(server, "/a", store=store)
    assert "if-none-match" not in server.sent[-1].headers


def test_the_store_drops_the_least_recently_used_beyond_its_size():
    store = EtagStore(max_bytes=10)
    store.keep(("a", ""), Stored("1", [], b"12345"))
    store.keep(("b", ""), Stored("2", [], b"12345"))
    store.get(("a", ""))
    store.keep(("c", ""), Stored("3", [], b"123"))
    assert store.get(("b", "")) is None and store.get(("a", "")) and store.get(("c", ""))
    assert store.size == 8
    store.keep(("huge", ""), Stored("4", [], b"x" * 11))
    assert store.get(("huge", "")) is None and store.size == 8


def test_the_bots_client_revalidates_against_the_fake_github():
    world = World.load(DEMO_WORLD)
    repo, pr = world.pull_repo()
    owner, name = repo.full_name.split("/")
    with FakeGitHub(DEMO_WORLD) as fake:
        gh = installation_client(REPLAY_APP_ID, throwaway_key(), repo.installation_id, fake.url)

        async def twice() -> list:
            async with gh:
                return [(await gh.rest.pulls.async_get(owner, name, pr["number"])).parsed_data for _ in range(2)]
        first, second = asyncio.run(twice())
        stats = fake.state.ledger.stats()
    assert json.dumps(first.model_dump(mode="json")) == json.dumps(second.model_dump(mode="json"))
    assert stats["not_modified"] == 1
