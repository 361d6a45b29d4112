"""How the App's threads and processes run: yielding to the webhook's event loop, and the garbage collector.

The event loop hands work to the commit thread (app/group_commit.py) and the
jobs run on a thread of their own (app/background.py). By default Linux lets
a thread that is woken up preempt the thread that woke it: the event loop,
still holding the GIL, is then taken off the CPU, and the woken thread can
do nothing until it gets the GIL back. On a machine whose cores are all busy
that costs the loop its turn on the CPU at every hand-over. A SCHED_BATCH
thread is never preferred on wake-up (it still gets its fair share of CPU),
so it runs when the loop waits, or on another core.

A collection of the cyclic garbage collector holds the GIL while it scans:
CPython's thresholds (700, 10, 10) collected hundreds of times a minute with
20 verifications running, and scanned every object at each full collection
(up to 0.2 s). `collect_less` freezes the objects made at start-up out of all
scans and collects the young generation every 10,000 objects, a full
collection after 100 of those.
"""

from __future__ import annotations

import gc
import os

GC_THRESHOLDS = (10_000, 10, 100)


def collect_less() -> None:
    """Set the garbage collector as the App's processes run it: called once set-up is done (what was imported
    and built by then stays, so no scan needs to look at it again)."""
    gc.collect()
    gc.freeze()
    gc.set_threshold(*GC_THRESHOLDS)


def yield_to_the_event_loop() -> None:
    """Make the calling thread (and the threads it starts) SCHED_BATCH, where the system has it."""
    if hasattr(os, "sched_setscheduler") and hasattr(os, "SCHED_BATCH"):
        try:
            os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        except OSError:  # a sandbox that forbids it: the threads run as any other
            pass


def lower_priority(nice: int) -> None:
    """Lower the calling process's CPU priority by `nice` (0: leave it). Verifying is throughput work and
    acknowledging a delivery is not: GitHub gives a delivery 10 s and retries a slow one, so when a delivery
    arrives the kernel should give the server's event loop a core ahead of the verifications' processes."""
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:
            pass
