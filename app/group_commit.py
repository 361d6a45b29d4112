"""Group commit of webhook deliveries: those that arrive while a commit is in flight share the next one.

A delivery is answered only once it is durable, and what makes it durable
costs the same for one delivery as for many: a transaction, a commit (a WAL
write; on PostgreSQL a round trip and a flush), a hand-over to a thread. So
the first delivery after a quiet spell is committed at once, alone, and the
ones that arrive meanwhile wait for that commit to end and then go together
in one transaction (`Store.record_deliveries`). Idle, a delivery waits for
nothing but its own commit; under load, the commits per second stay what
the database can do while the deliveries per commit grow.

The commits run one at a time on a thread of their own, never on the event
loop; the event loop's only work is to queue a delivery and hand the batch
over.
"""

from __future__ import annotations

import asyncio
from concurrent.futures import ThreadPoolExecutor

from .store import Delivery, Store

MAX_BATCH = 256  # deliveries in one transaction: bounds how long one commit holds the write lock


class GroupCommit:
    def __init__(self, store: Store) -> None:
        self.store = store
        self._waiting: list[tuple[Delivery, asyncio.Future]] = []
        self._committing: asyncio.Task | None = None
        self._thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="group-commit")

    async def record(self, delivery: Delivery) -> bool:
        """Record `delivery` with its jobs; False if it was seen before. Raises what kept it out."""
        future = asyncio.get_running_loop().create_future()
        self._waiting.append((delivery, future))
        if self._committing is None:
            self._committing = asyncio.get_running_loop().create_task(self._commit_all())
        return await future

    async def _commit_all(self) -> None:
        """Commit batches until no delivery waits."""
        loop = asyncio.get_running_loop()
        try:
            while self._waiting:
                batch, self._waiting = self._waiting[:MAX_BATCH], self._waiting[MAX_BATCH:]
                try:
                    outcomes = await loop.run_in_executor(self._thread, self.store.record_deliveries,
                                                          [d for d, _ in batch])
                except Exception as exc:  # noqa: BLE001 - the transaction failed: every delivery of it did
                    outcomes = [exc] * len(batch)
                for (_, future), outcome in zip(batch, outcomes):
                    if future.done():  # its request went away (cancelled); it is recorded all the same
                        continue
                    if isinstance(outcome, Exception):
                        future.set_exception(outcome)
                    else:
                        future.set_result(outcome)
        finally:
            self._committing = None

    def close(self) -> None:
        self._thread.shutdown(wait=True)
