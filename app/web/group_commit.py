"""Group commit of webhook deliveries: those that arrive while a commit is in flight share the next one.

A delivery is answered only once it is durable, and what makes it durable
costs the same for one delivery as for many: a transaction, a commit (a WAL
write; on PostgreSQL a round trip and a flush), a hand-over to a thread. So
the first delivery after a quiet spell is committed at once, alone, and the
ones that arrive meanwhile wait for that commit to end and then go together
in one transaction (`Store.record_deliveries`). Idle, a delivery waits for
nothing but its own commit; under load, the commits per second stay what
the database can do while the deliveries per commit grow.

Commits begin at least COMMIT_SPACING_SECONDS apart. A commit costs the
same for one delivery as for many (~200 us of CPU for BEGIN, the two INSERTs
and COMMIT on SQLite, most of it in BEGIN and COMMIT), and under load one
took ~0.3 ms while deliveries came every ~1.4 ms, so nearly every delivery
paid a commit of its own, on a machine whose cores the server shares. A
delivery after a quiet spell (none committed for the spacing) is still
handed over at once.

The commits run one at a time on a thread of their own, never on the event
loop; the event loop's only work is to queue a delivery and hand the batch
over.
"""

from __future__ import annotations

import asyncio
import queue
import threading

from app.store.sql import Delivery, Store

MAX_BATCH = 256  # deliveries in one transaction: bounds how long one commit holds the write lock
COMMIT_SPACING_SECONDS = 0.002  # from the start of one commit to the start of the next, at least

Waiter = tuple[Delivery, asyncio.Future]


class GroupCommit:
    """Deliveries recorded in batches by one thread: at most one batch is with it at a time, and the
    deliveries that arrive meanwhile make the next."""

    def __init__(self, store: Store, spacing: float = COMMIT_SPACING_SECONDS) -> None:
        self.store, self.spacing = store, spacing
        self._next = 0.0  # the event loop's time before which no batch is handed over
        self._waiting: list[Waiter] = []
        self._committing = False  # a batch is with the commit thread
        self._batches: queue.SimpleQueue[tuple[asyncio.AbstractEventLoop, list[Waiter]] | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._commit_forever, name="group-commit", daemon=True)
        self._thread.start()

    async def record(self, delivery: Delivery) -> bool:
        """Record `delivery` with its jobs; False if it was seen before. Raises what kept it out."""
        loop = asyncio.get_running_loop()
        future = loop.create_future()
        self._waiting.append((delivery, future))
        if not self._committing:
            self._committing = True
            self._hand_over_soon(loop)
        return await future

    def _hand_over_soon(self, loop: asyncio.AbstractEventLoop) -> None:
        """Hand the waiting deliveries over once the spacing since the last commit has passed, and the loop
        has run what is ready now: deliveries that arrived together (in one wait for the sockets) go
        together, though none was waiting when the first came."""
        wait = self._next - loop.time()
        if wait > 0:
            loop.call_later(wait, self._hand_over, loop)
        else:
            loop.call_soon(self._hand_over, loop)

    def _hand_over(self, loop: asyncio.AbstractEventLoop) -> None:
        self._next = loop.time() + self.spacing
        batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
        self._batches.put((loop, batch))

    def _commit_forever(self) -> None:
        """The commit thread: one transaction per batch; each delivery's outcome goes back to its loop."""
        while (item := self._batches.get()) is not None:
            loop, batch = item
            try:
                outcomes = self.store.record_deliveries([d for d, _ in batch])
            except Exception as exc:  # noqa: BLE001 - the transaction failed: every delivery of it did
                outcomes = [exc] * len(batch)
            try:
                loop.call_soon_threadsafe(self._committed, loop, batch, outcomes)
            except RuntimeError:  # the loop is closed: the server has stopped
                pass

    def _committed(self, loop: asyncio.AbstractEventLoop, batch: list[Waiter],
                   outcomes: list[bool | Exception]) -> None:
        for (_, future), outcome in zip(batch, outcomes):
            if future.done():  # its request went away (cancelled); it is recorded all the same
                continue
            if isinstance(outcome, Exception):
                future.set_exception(outcome)
            else:
                future.set_result(outcome)
        if self._waiting:
            self._hand_over_soon(loop)
        else:
            self._committing = False

    def close(self) -> None:
        """Commit what was handed over, then stop the thread."""
        self._batches.put(None)
        self._thread.join()
