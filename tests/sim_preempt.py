"""Forced preemption for numba's CUDA simulator: the thread timings a loaded machine produces, on demand.

A simulated kernel must give the same result under every interleaving of its threads that the CUDA
semantics allow. Waiting for CPU load to find a bad interleaving takes hours; this module makes the
simulator hand the GIL to another thread (``time.sleep(0)``) at the points where an OS preemption
could land anyway:

* before each simulated device-function call (every warp_ops twin, tile copier, product), with
  probability ``p`` (a seeded generator: the schedule differs, the outcome must not);
* before each ``syncthreads`` (a thread arriving late at a barrier);
* inside a shared-array allocation (``gpu_kernels.simulator._new_array``: where numba's own
  allocator had its check-then-set race).

Used by ``tests/test_simulator_race.py`` (the short CI version) and by ``tools/stress_simulator.py``
(every simulator suite, round after round, under CPU load), which sets ``FLASHIO_SIM_PREEMPT=p`` for
tests/conftest.py to call ``enable(p)`` in each test process.
"""

from __future__ import annotations

import contextlib
import random
import threading
import time

_STATE = {"p": 0.0, "saved": None}
_RNG = random.Random(26)
_RNG_LOCK = threading.Lock()


def _coin(p: float) -> bool:
    with _RNG_LOCK:
        return _RNG.random() < p


def enable(p: float) -> None:
    """Yield the GIL before a device-function call with probability p, before every barrier and
    inside every shared-array allocation. Idempotent; ``disable()`` undoes it."""
    from numba.cuda.simulator import kernel

    import gpu_kernels.simulator as sim

    _STATE["p"] = float(p)
    if _STATE["saved"] is not None:
        return
    call, sync, new = kernel.FakeCUDAKernel.__call__, kernel.BlockThread.syncthreads, sim._new_array
    _STATE["saved"] = (call, sync, new)

    def preempted_call(self, *args):
        if self._device and _coin(_STATE["p"]):
            time.sleep(0)
        return call(self, *args)

    def preempted_sync(self):
        time.sleep(0)
        return sync(self)

    def preempted_new(shape, dtype):
        time.sleep(0)
        return new(shape, dtype)

    kernel.FakeCUDAKernel.__call__ = preempted_call
    kernel.BlockThread.syncthreads = preempted_sync
    sim._new_array = preempted_new


def disable() -> None:
    from numba.cuda.simulator import kernel

    import gpu_kernels.simulator as sim

    saved = _STATE["saved"]
    if saved is None:
        return
    kernel.FakeCUDAKernel.__call__, kernel.BlockThread.syncthreads, sim._new_array = saved
    _STATE["saved"] = None


class YieldingNumpy:
    """numpy, except that np.empty hands the GIL over first: numba's allocator calls it between its
    check and its set, so this is a preemption inside the window."""

    def __getattr__(self, name):
        import numpy as np

        return getattr(np, name)

    @staticmethod
    def empty(*args, **kwargs):
        import numpy as np

        time.sleep(0)
        return np.empty(*args, **kwargs)


def numba_allocator() -> None:
    """Put numba-cuda's own shared-array allocator back, with the same forced preemption inside its
    check-then-set window (np.empty yields first): what the fix in gpu_kernels.simulator removed."""
    from numba.cuda.simulator import kernelapi

    import gpu_kernels.simulator as sim

    sim.install()  # records numba's allocator
    kernelapi.FakeCUDAShared.array = sim.NUMBA_SHARED_ARRAY
    kernelapi.np = YieldingNumpy()
    sim.install = lambda: True  # later imports of gpu_kernels modules must not put the fix back


@contextlib.contextmanager
def preempted(p: float):
    enable(p)
    try:
        yield
    finally:
        disable()
