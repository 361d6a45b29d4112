"""How the App's processes share the CPU: the verifications' processes run below the server's priority.

The server's event loop acknowledges deliveries; the jobs' process and the
checks' processes (app/jobs/process.py, app/judge.py) verify. The interpreter
runs as CPython sets it (garbage collector, thread switch interval, scheduler
policy): the ingest goals in bench/ are met without tuning it.
"""

from __future__ import annotations

import os


def lower_priority(nice: int) -> None:
    """Lower the calling process's CPU priority by `nice` (0: leave it). Verifying is throughput work and
    acknowledging a delivery is not: GitHub gives a delivery 10 s and retries a slow one, so when a delivery
    arrives the kernel should give the server's event loop a core ahead of the verifications' processes."""
    if nice and hasattr(os, "nice"):
        try:
            os.nice(nice)
        except OSError:
            pass
