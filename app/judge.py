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
would have been raised in the thread.

A PR's files are its author's, and a reader made slow or hungry by crafted
content must not stall every other PR: each verification's checks have a
`Budget` of CPU time and memory, enforced from outside. The thread that
talks to the process waits for an answer in short polls, reading the
process's CPU time and resident memory from /proc meanwhile; the process
also caps its own address space at what it holds plus the memory budget
(`RLIMIT_AS`; a `MemoryError` ends it). On overrun the process is killed and
another started at once, and the verification gets the verdict
`checks.budget.overrun_verdict` builds from the snapshot and what the
process last noted (`checks.progress`: the rule running, the file being
read): UNDECIDED rows, never a PASS. No wait is unbounded: an answer that
takes longer than the budget's `wall_seconds` is an overrun too, and a
verification whose job stopped waiting (its time ran out, its lease was
lost) has its checks stopped the same way. `InThread`, the default (the CLI, the
backtest, the tests), runs them on threads beside the caller's event loop.
"""

from __future__ import annotations

import asyncio
import ctypes
import hashlib
import itertools
import json
import logging
import multiprocessing
import os
import pickle
import queue
import signal
import threading
import time
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from multiprocessing.connection import Connection
from multiprocessing.reduction import ForkingPickler
from types import MappingProxyType
from typing import Any, Protocol

from checks import progress
from checks.budget import Overrun, overrun_verdict
from checks.engine import Completion
from checks.evidence import Wanted
from checks.registry import RULES
from checks.result import Verdict
from checks.rule import Rule
from checks.snapshot import Snapshot, frozen_map

from .github.client import GitHubError
from .jobs.scheduling import lower_priority

log = logging.getLogger("signoff_bot.judge")

UNANSWERED = ("close", "ping")  # requests no one waits for: the process sends nothing back
SESSION_OPS = ("open", "add")  # the requests that run checks, within the verification's budget
POLL_SECONDS = 0.05  # between two looks at the process while an answer is awaited
EXIT_MEMORY = 75  # the process's exit status when it ran out of its memory budget
NOTES_BYTES = 1024  # what the process last noted (`checks.progress`), as JSON
MB = 1024 * 1024
READY = "ready"
START_SECONDS = 120.0  # for a new process to import the rules and say it is ready


@dataclass(frozen=True)
class Budget:
    """What one verification's checks may spend, over all its rounds: CPU seconds, bytes of memory beyond
    what the process held before, and (a bound on every wait) seconds of wall time."""

    cpu_seconds: float = 10.0
    memory_bytes: int = 512 * MB
    wall_seconds: float = 60.0  # the process runs at a lower priority: on a busy machine CPU time comes slowly

    @classmethod
    def of(cls, cpu_seconds: float, memory_mb: int) -> "Budget":
        return cls(cpu_seconds, memory_mb * MB, max(60.0, 6 * cpu_seconds))

    def limit(self, what: str) -> str:
        return {"cpu": f"{self.cpu_seconds:g} s of CPU time", "memory": f"{self.memory_bytes // MB} MB of memory",
                "wall": f"{self.wall_seconds:g} s"}[what]


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


class LocalRounds:
    """A `Completion`'s rounds judged in this process: on `threads`, off the event loop; without them on the
    caller's own thread (a fetcher of local files, a world or a git history, has nothing to do meanwhile)."""

    def __init__(self, done: Completion, threads: ThreadPoolExecutor | None = None) -> None:
        self.done = done
        self._threads = threads

    @property
    def snapshot(self) -> Snapshot:
        return self.done.snapshot

    @property
    def verdict(self) -> Verdict:
        return self.done.verdict

    def wanted(self) -> Wanted | None:
        return self.done.wanted()

    async def add(self, snap: Snapshot) -> None:
        if self._threads is None:
            self.done.add(snap)
        else:
            await asyncio.get_running_loop().run_in_executor(self._threads, self.done.add, snap)

    def close(self) -> None:
        pass


# How many verifications `InThread` judges at once. The rules share only immutable readings (`checks.memo`)
# and each thread parses with its own tree-sitter parser, so any number is safe (tests/test_checks_threads.py);
# the GIL makes them take turns, so more threads let a short verification pass a long one, not run faster.
CHECKS_THREADS = 4


class InThread:
    """The checks on threads of the process: off the event loop, so that the reads still in flight while a
    snapshot is judged (read ahead, downloads and their redirects) are answered and followed meanwhile, not
    after."""

    def __init__(self, threads: int = CHECKS_THREADS) -> None:
        self._threads = ThreadPoolExecutor(max_workers=threads, thread_name_prefix="checks")

    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds:
        done = await asyncio.get_running_loop().run_in_executor(self._threads, Completion, snap, rules)
        return LocalRounds(done, self._threads)

    async def digest(self, snap: Snapshot) -> str:
        return inputs_digest(snap)


IN_THREAD = InThread()


# --- the checks' process ------------------------------------------------------------------------------


class _Notes:
    """`checks.progress`'s watcher in the process: the last rule, text and sign-off noted, written to memory
    the server's side reads when it stops the process."""

    def __init__(self, shared: Any) -> None:
        self.shared = shared
        self.notes: dict[str, str] = {}

    def clear(self) -> None:
        self.notes = {}
        self.shared.value = b""

    def note(self, what: str, value: str) -> None:
        if what == "rule":
            self.notes.pop("text", None)
        self.notes[what] = value
        data = json.dumps(self.notes).encode()
        self.shared.value = data if len(data) < NOTES_BYTES else b""


def read_notes(shared: Any) -> dict[str, str]:
    try:
        notes = json.loads(shared.value.decode() or "{}")
    except ValueError:  # written as the process was stopped
        return {}
    return notes if isinstance(notes, dict) else {}


def _address_space() -> int | None:
    try:
        with open("/proc/self/statm") as statm:
            return int(statm.read().split()[0]) * os.sysconf("SC_PAGE_SIZE")
    except (OSError, ValueError, IndexError):
        return None


def _cap_memory(budget: int) -> None:
    """Cap the address space at what it is now plus `budget` (0: at the hard limit again): allocating beyond
    raises MemoryError."""
    try:
        import resource
    except ImportError:  # not a Unix: the outside watch still holds
        return
    hard = resource.getrlimit(resource.RLIMIT_AS)[1]
    held = _address_space() if budget else None
    if budget and held is None:
        return
    try:
        resource.setrlimit(resource.RLIMIT_AS, (held + budget if budget else hard, hard))
    except (ValueError, OSError):  # a hard limit below it: the outside watch still holds
        pass


def _serve(conn: Connection, nice: int = 0, shared: Any = None, memory_budget: int = 0) -> None:
    """The process, at `nice` below the server's priority: answer requests one at a time until the server's
    end of the pipe closes. Out of memory anywhere (a request's checks run with the address space capped),
    it exits with `EXIT_MEMORY`."""
    lower_priority(nice)
    notes = _Notes(shared) if shared is not None else None
    progress.watch(notes)
    sessions: dict[int, Completion] = {}
    try:
        conn.send(READY)  # set up: from now on, the CPU time it spends is the requests'
        while _answer_one(conn, sessions, notes, memory_budget):
            pass
    except MemoryError:  # over the budget: the server's side reads the exit status
        os._exit(EXIT_MEMORY)
    except (EOFError, OSError):
        return


def _answer_one(conn: Connection, sessions: dict[int, Completion], notes: _Notes | None, memory_budget: int) -> bool:
    """Read one request and answer it; False when the server's end has closed."""
    try:
        op, session, arg = conn.recv()
    except (EOFError, OSError):
        return False
    reply: Any = None
    if op in UNANSWERED:
        sessions.pop(session, None)  # "ping" has none
        return True
    try:
        if op in SESSION_OPS:
            if notes is not None:
                notes.clear()
            _cap_memory(memory_budget)
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
        elif op == "digest":
            reply = inputs_digest(arg)
        answer = (True, reply)
    except MemoryError:
        raise
    except Exception as exc:  # noqa: BLE001 - a rule's exception goes back to the job that ran it
        sessions.pop(session, None)
        answer = (False, exc)
    finally:
        _cap_memory(0)
    try:
        conn.send(answer)
    except (EOFError, OSError):
        return False
    except Exception as exc:  # noqa: BLE001 - an exception that does not pickle: its type and message
        conn.send((False, RuntimeError(f"{type(exc).__name__}: {exc}")))
    return True


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
    abandoned: threading.Event | None = None  # set when the caller stops waiting (cancelled)


class _Looks:
    """The process's CPU time and resident memory, as /proc shows them (None where it does not)."""

    TICKS = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

    def __init__(self, pid: int) -> None:
        self.pid = pid

    def cpu(self) -> float | None:
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / self.TICKS
        except (OSError, ValueError, IndexError):
            return None

    def memory(self) -> int | None:
        try:
            with open(f"/proc/{self.pid}/statm") as statm:
                return int(statm.read().split()[1]) * self.PAGE
        except (OSError, ValueError, IndexError):
            return None


class _Process:
    """One checks process and the thread that talks to it: requests in order, one answer each, each waited
    for within the verification's `Budget`."""

    def __init__(self, name: str, nice: int = 0, budget: Budget = Budget()) -> None:
        self.name, self.nice, self.budget = name, nice, budget
        self.sessions = 0  # open sessions pinned here
        self.replaced = 0  # processes killed for a budget or a caller that stopped waiting
        self._spent: dict[int, float] = {}  # CPU seconds each open session's checks used so far
        self._notes = multiprocessing.get_context("spawn").RawArray(ctypes.c_char, NOTES_BYTES)
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._conn: Connection | None = None
        self._process: multiprocessing.process.BaseProcess | None = None
        self._thread = threading.Thread(target=self._run, name=f"{name} client", daemon=True)
        self._thread.start()

    def call(self, op: str, session: int, arg: Any) -> asyncio.Future:
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        abandoned = threading.Event()
        future.add_done_callback(lambda f: f.cancelled() and abandoned.set())
        self._requests.put(_Request(op, session, arg, loop, future, abandoned))
        return future

    def tell(self, op: str, session: int, arg: Any = None) -> None:
        """A request no one waits for (usable from any thread, or from a task being cancelled)."""
        self._requests.put(_Request(op, session, arg))

    def _run(self) -> None:
        while (request := self._requests.get()) is not None:
            if request.op == "close":
                self._spent.pop(request.session, None)
            if request.abandoned is not None and request.abandoned.is_set():
                continue  # its caller stopped waiting before it was sent
            alive = False
            try:
                conn = self._connected()
                alive = self._process.is_alive()
                conn.send((request.op, request.session, request.arg))
                ok, value = (True, None) if request.op in UNANSWERED else self._answer(conn, request)
            except (EOFError, OSError) as exc:
                ok, value = self._died(exc, request, alive)
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

    def _answer(self, conn: Connection, request: _Request) -> tuple[bool, Any]:
        """The process's answer; an `Overrun` when it outran the budget (it is then replaced)."""
        looks = _Looks(self._process.pid)
        budgeted = request.op in SESSION_OPS
        spent = self._spent.get(request.session, 0.0) if budgeted and request.op == "add" else 0.0
        cpu_at, held = looks.cpu(), looks.memory()
        deadline = time.monotonic() + self.budget.wall_seconds
        over: str | None = None
        while not conn.poll(POLL_SECONDS):
            if request.abandoned is not None and request.abandoned.is_set():
                over = "abandoned"
            elif time.monotonic() > deadline:
                over = "wall"
            elif budgeted and cpu_at is not None and (now := looks.cpu()) is not None \
                    and spent + now - cpu_at > self.budget.cpu_seconds:
                over = "cpu"
            elif budgeted and held is not None and (now := looks.memory()) is not None \
                    and now - held > self.budget.memory_bytes:
                over = "memory"
            if over is not None:
                return self._overrun(over, request)
        ok, value = conn.recv()
        if budgeted:
            now = looks.cpu()
            if ok and value[1] is not None and cpu_at is not None and now is not None:
                self._spent[request.session] = spent + now - cpu_at
            else:  # the last round, or an error: the session is done
                self._spent.pop(request.session, None)
        return ok, value

    def _overrun(self, what: str, request: _Request) -> tuple[bool, Overrun | JudgeLost]:
        """Stop the process, start another; the `Overrun` the verification's verdict is built from."""
        notes = read_notes(self._notes)
        self._replace()
        self._spent.pop(request.session, None)
        if what == "abandoned":
            log.warning("the checks' process was stopped: its verification stopped waiting",
                        extra={"error": notes.get("rule", "")})
            return False, JudgeLost("the verification stopped waiting for its checks")
        log.warning("the checks' process outran a verification's budget; starting another",
                    extra={"error": f"{what}: {notes.get('rule', '')}"})
        if request.op not in SESSION_OPS:
            return False, JudgeLost(f"the checks' process did not answer within {self.budget.limit(what)}")
        return True, _overrun_of(self.budget.limit(what), notes)

    def _died(self, exc: BaseException, request: _Request, alive: bool) -> tuple[bool, JudgeLost | Overrun]:
        """The process stopped. During a verification's checks (it was `alive` when they were sent), unless
        something killed it: out of its memory budget (Python's MemoryError, or a C library that could not
        allocate and crashed), so the verification's verdict is an `Overrun`. Else a transient `JudgeLost`."""
        notes = read_notes(self._notes)
        code = self._process.exitcode if self._process is not None else None
        if self._process is not None and code is None:
            self._process.join(5)
            code = self._process.exitcode
        log.error("the checks' process stopped; starting another",
                  extra={"error": f"{type(exc).__name__}, exit status {code}"})
        self._stop()
        if not (alive and request.op in SESSION_OPS and code not in (None, 0, -signal.SIGKILL, -signal.SIGTERM)):
            return False, JudgeLost(f"the checks' process stopped ({type(exc).__name__}); retrying")
        self._replace()
        self._spent.pop(request.session, None)
        limit = self.budget.limit("memory")
        if code != EXIT_MEMORY:
            limit += f"; the checks' process ended with exit status {code}"
        return True, _overrun_of(limit, notes)

    def _replace(self) -> None:
        if self._process is not None:
            self._process.kill()
        self._stop()
        self.replaced += 1
        try:
            self._connected()  # the next verification does not wait for the start
        except Exception as exc:  # noqa: BLE001 - started again by the next request
            log.error("the checks' process could not start", extra={"error": f"{type(exc).__name__}: {exc}"})

    def _connected(self) -> Connection:
        if self._conn is None:
            context = multiprocessing.get_context("spawn")
            ours, theirs = context.Pipe()
            self._process = context.Process(target=_serve, args=(theirs, self.nice, self._notes,
                                                                 self.budget.memory_bytes),
                                            name=self.name, daemon=True)
            self._process.start()
            theirs.close()  # the process's end only in the process: when we go, it reads EOF and exits
            self._conn = ours
            if not ours.poll(START_SECONDS) or ours.recv() != READY:
                self._stop()
                raise JudgeLost(f"the checks' process did not start within {START_SECONDS:g} s")
        return self._conn

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


def _overrun_of(limit: str, notes: dict[str, str]) -> Overrun:
    return Overrun(limit, notes.get("rule") or None, notes.get("text") or None, notes.get("signer") or None)


def _settle(future: asyncio.Future, ok: bool, value: Any) -> None:
    if future.done():  # its caller was cancelled
        return
    if ok:
        future.set_result(value)
    else:
        future.set_exception(value)


class _RemoteRounds:
    def __init__(self, process: _Process, session: int, snap: Snapshot, rules: Sequence[Rule]) -> None:
        self.process, self.session, self.snapshot, self.rules = process, session, snap, rules
        self.verdict: Verdict | None = None
        self._wanted: Wanted | None = None
        self._open = True

    async def _step(self, op: str, arg: Any) -> None:
        try:
            answer = await self.process.call(op, self.session, arg)
        except BaseException:
            self.close()
            raise
        if isinstance(answer, Overrun):  # the process is gone, and the session with it
            self.verdict, self._wanted = overrun_verdict(self.snapshot, self.rules, answer, self.verdict), None
        else:
            self.verdict, self._wanted = answer
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
    """`processes` checks processes, `nice` below the caller's CPU priority (app/jobs/scheduling.py
    `lower_priority`), each verification's checks within `budget`; each verification's rounds go to the
    process with fewest open."""

    def __init__(self, processes: int = 1, nice: int = 0, budget: Budget = Budget()) -> None:
        self._processes = [_Process(f"signoff-bot checks {n}", nice, budget) for n in range(processes)]
        self._ids = itertools.count(1)
        for process in self._processes:
            process.tell("ping", 0)  # spawned now, not in the first verification

    async def rounds(self, snap: Snapshot, rules: Sequence[Rule]) -> Rounds:
        process = min(self._processes, key=lambda p: p.sessions)
        process.sessions += 1
        rules = tuple(rules)
        done = _RemoteRounds(process, next(self._ids), snap, rules)
        await done._step("open", (snap, rules))
        return done

    async def digest(self, snap: Snapshot) -> str:
        return await min(self._processes, key=lambda p: p.sessions).call("digest", 0, snap)

    def close(self) -> None:
        """Stop the processes (what is queued for them is answered first)."""
        for process in self._processes:
            process.close()
