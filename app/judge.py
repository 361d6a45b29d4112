"""Where the checks run: on the caller's thread, or in a process of their own beside the App server.

A verification's checks take tens of milliseconds of CPU at a stretch (the
rules, and the digest of the snapshot the audit trail keeps), much of it in C
calls that hold the GIL throughout: in the server's process, every webhook
delivery arriving meanwhile waited behind them. `Judge` runs them in a
process of its own (`settings.check_processes` of them), so the acknowledging
event loop never waits for them: the jobs thread sends the snapshot (plain
data, pickled in about a millisecond), the process answers with the verdict
and what the next evidence round needs. A verification's rounds all run in
the same process, on the same context (`checks.engine.Completion`), as they
do in the thread, so the verdict is the same.

The process is spawned (the server has threads; forking it would copy their
locks), started at once and again after it dies; it exits when its pipe to
the server closes, so a server killed with SIGKILL leaves no process behind.
A request it could not answer because it died is a transient `JudgeLost`:
the job is retried. An exception a rule raised goes back to the job as it
would have been raised in the thread. `InThread`, the default (the CLI, the
backtest, the tests), is one thread beside the caller's event loop.
"""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import logging
import multiprocessing
import pickle
import queue
import threading
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any, Protocol

from checks.engine import Completion
from checks.evidence import Wanted
from checks.registry import RULES
from checks.result import Verdict
from checks.rule import Rule
from checks.snapshot import Snapshot, frozen_map

from .github import GitHubError
from .scheduling import collect_less, lower_priority, yield_to_the_event_loop

log = logging.getLogger("signoff_bot.judge")

UNANSWERED = ("close", "ping")  # requests no one waits for: the process sends nothing back


def inputs_digest(snap: Snapshot) -> str:
    """A stable digest of what the verdict was computed from, for the audit trail."""
    return hashlib.sha256(repr(snap).encode()).hexdigest()


_REGISTERED = {rule.id: rule for rule in RULES}


def _reduce_mapping(mapping: MappingProxyType) -> tuple:
    return frozen_map, (dict(mapping),)


def _registered(rule_id: str) -> Rule:
    return _REGISTERED[rule_id]


def _reduce_rule(rule: Rule) -> tuple:
    if _REGISTERED.get(rule.id) is not rule:
        raise pickle.PicklingError(f"rule {rule.id!r} is not in checks.registry: it runs only in the thread")
    return _registered, (rule.id,)


# What pickle cannot take by itself, taken apart and rebuilt the same way on the other side: the snapshot's
# read-only maps (`frozen_map`), and rules (they hold their modules), sent by id. On multiprocessing's
# pickler only, not for every pickle.
ForkingPickler.register(MappingProxyType, _reduce_mapping)
ForkingPickler.register(Rule, _reduce_rule)


class JudgeLost(GitHubError):
    """The checks' process stopped before it answered: transient (`status` None), the job runs again."""


class Rounds(Protocol):
    """One PR's evidence rounds, as `Completion`: `wanted` once after each round, `add` the fuller snapshot."""

    snapshot: Snapshot
    verdict: Verdict

    def wanted(self) -> Wanted | None: ...

    async def add(self, snap: Snapshot) -> None: ...

    def close(self) -> None: ...


class Checks(Protocol):
    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds: ...

    async def digest(self, snap: Snapshot) -> str: ...


class _LocalRounds:
    def __init__(self, done: Completion) -> None:
        self.done = done

    @property
    def snapshot(self) -> Snapshot:
        return self.done.snapshot

    @property
    def verdict(self) -> Verdict:
        return self.done.verdict

    def wanted(self) -> Wanted | None:
        return self.done.wanted()

    async def add(self, snap: Snapshot) -> None:
        await asyncio.get_running_loop().run_in_executor(BESIDE_THE_LOOP, self.done.add, snap)

    def close(self) -> None:
        pass


# The thread `InThread` judges in, one snapshot at a time, as the event loop itself did: the rules share state
# that is not theirs to lock (checks/bash's one tree-sitter parser calls back into Python while it parses,
# where another thread could take the GIL and start a parse of its own on it).
BESIDE_THE_LOOP = ThreadPoolExecutor(max_workers=1, thread_name_prefix="checks")


class InThread:
    """The checks in the process's one checks thread: off the event loop, so that the reads still in flight
    while a snapshot is judged (read ahead, downloads and their redirects) are answered and followed
    meanwhile, not after."""

    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds:
        return _LocalRounds(await asyncio.get_running_loop().run_in_executor(BESIDE_THE_LOOP, Completion, snap,
                                                                             rules))

    async def digest(self, snap: Snapshot) -> str:
        return inputs_digest(snap)


IN_THREAD = InThread()


# --- the checks' process ------------------------------------------------------------------------------


def _serve(conn: Connection, nice: int = 0) -> None:
    """The process, at `nice` below the server's priority: answer requests one at a time until the server's
    end of the pipe closes."""
    yield_to_the_event_loop()
    lower_priority(nice)
    collect_less()  # as in the server: the modules the rules import are never scanned again
    sessions: dict[int, Completion] = {}
    while True:
        try:
            op, session, arg = conn.recv()
        except (EOFError, OSError):
            return
        try:
            reply: Any = None
            if op == "open":
                snap, rules = arg
                sessions[session] = done = Completion(snap, rules)
                reply = _round(sessions, session, done)
            elif op == "add":
                done = sessions.get(session)
                if done is None:  # opened in a process that has died since
                    raise JudgeLost("the checks' process restarted during the verification; retrying")
                done.add(arg)
                reply = _round(sessions, session, done)
            elif op in UNANSWERED:
                sessions.pop(session, None)  # "ping" has none
                continue
            elif op == "digest":
                reply = inputs_digest(arg)
            answer = (True, reply)
        except Exception as exc:  # noqa: BLE001 - a rule's exception goes back to the job that ran it
            sessions.pop(session, None)
            answer = (False, exc)
        try:
            conn.send(answer)
        except (EOFError, OSError):
            return
        except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its type and message
            conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))


def _round(sessions: dict[int, Completion], session: int, done: Completion) -> tuple[Verdict, Wanted | None]:
    """The round's verdict and what the next round needs; after the last round, the session is done."""
    wanted = done.wanted()
    if wanted is None:
        del sessions[session]
    return done.verdict, wanted


@dataclass
class _Request:
    op: str
    session: int
    arg: Any
    loop: asyncio.AbstractEventLoop | None = None
    future: asyncio.Future | None = None


class _Process:
    """One checks process and the thread that talks to it: requests in order, one answer each."""

    def __init__(self, name: str, nice: int = 0) -> None:
        self.name, self.nice = name, nice
        self.sessions = 0  # open sessions pinned here
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._thread = threading.Thread(target=self._run, name=f"{name} client", daemon=True)
        self._thread.start()

    def call(self, op: str, session: int, arg: Any) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._requests.put(_Request(op, session, arg, loop, future))
        return future

    def tell(self, op: str, session: int, arg: Any = None) -> None:
        """A request no one waits for (usable from any thread, or from a task being cancelled)."""
        self._requests.put(_Request(op, session, arg))

    def _run(self) -> None:
        yield_to_the_event_loop()
        while (request := self._requests.get()) is not None:
            try:
                conn = self._connected()
                conn.send((request.op, request.session, request.arg))
                ok, value = (True, None) if request.op in UNANSWERED else conn.recv()
            except (EOFError, OSError) as exc:
                self._lost(exc)
                ok, value = False, JudgeLost(f"the checks' process stopped ({type(exc).__name__}); retrying")
            except Exception as exc:  # noqa: BLE001 - a request that does not pickle, a process that cannot start
                ok, value = False, exc
            if request.future is not None:
                try:
                    request.loop.call_soon_threadsafe(_settle, request.future, ok, value)
                except RuntimeError:  # the caller's loop has closed
                    pass
            elif not ok:  # nobody to raise it to
                log.error("the checks' process could not take a request",
                          extra={"error": f"{type(value).__name__}: {value}"})
        self._stop()

    def _connected(self) -> Connection:
        if self._conn is None:
            context = multiprocessing.get_context("spawn")
            ours, theirs = context.Pipe()
            self._process = context.Process(target=_serve, args=(theirs, self.nice), name=self.name, daemon=True)
            self._process.start()
            theirs.close()  # the process's end only in the process: when we go, it reads EOF and exits
            self._conn = ours
        return self._conn

    def _lost(self, exc: BaseException) -> None:
        log.error("the checks' process stopped; starting another", extra={"error": type(exc).__name__})
        self._stop()

    def _stop(self) -> None:
        if self._conn is not None:
            self._conn.close()
            self._conn = None
        if self._process is not None:
            self._process.join(5)
            if self._process.is_alive():
                self._process.kill()
                self._process.join()
            self._process = None

    def close(self) -> None:
        self._requests.put(None)
        self._thread.join()


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    if future.done():  # its caller was cancelled
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class _RemoteRounds:
    def __init__(self, process: _Process, session: int, snap: Snapshot) -> None:
        self.process, self.session, self.snapshot = process, session, snap
        self.verdict: Verdict | None = None
        self._wanted: Wanted | None = None
        self._open = True

    async def _step(self, op: str, arg: Any) -> None:
        try:
            self.verdict, self._wanted = await self.process.call(op, self.session, arg)
        except BaseException:
            self.close()
            raise
        if self._wanted is None:
            self._released()  # the process has closed the session itself

    def wanted(self) -> Wanted | None:
        return self._wanted

    async def add(self, snap: Snapshot) -> None:
        self.snapshot = snap
        await self._step("add", snap)

    def close(self) -> None:
        if self._open:
            self.process.tell("close", self.session)
            self._released()

    def _released(self) -> None:
        if self._open:
            self._open = False
            self.process.sessions -= 1


class Judge:
    """`processes` checks processes, `nice` below the caller's CPU priority (app/scheduling.py
    `lower_priority`); each verification's rounds go to the one with fewest open."""

    def __init__(self, processes: int = 1, nice: int = 0) -> None:
        self._processes = [_Process(f"signoff-bot checks {n}", nice) for n in range(processes)]
        self._ids = itertools.count(1)
        for process in self._processes:
            process.tell("ping", 0)  # spawned now, not in the first verification

    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds:
        process = min(self._processes, key=lambda p: p.sessions)
        process.sessions += 1
        done = _RemoteRounds(process, next(self._ids), snap)
        await done._step("open", (snap, tuple(rules)))
        return done

    async def digest(self, snap: Snapshot) -> str:
        return await min(self._processes, key=lambda p: p.sessions).call("digest", 0, snap)

    def close(self) -> None:
        """Stop the processes (what is queued for them is answered first)."""
        for process in self._processes:
            process.close()
