"""Toy workers for tests/test_speed_pool.py: module-level, so that a spawned interpreter imports them by name."""

import os
import time


def worker(job, seq_lens, lock):
    kind = job[0]
    if kind == "raise":
        raise ValueError("toy failure")
    if kind == "die":
        os._exit(3)  # no report, no traceback: as a crash in the compiler would leave it
    if kind == "sleep":
        time.sleep(job[1])
    if kind == "locked":  # the time spent under the shared lock, to show that no two overlap
        with lock:
            start = time.monotonic()
            time.sleep(0.3)
            return [{"job": job[1], "start": start, "end": time.monotonic()}]
    return [{"job": kind, "n": n} for n in seq_lens[: job[1]]]
