"""numba's CUDA simulator made deterministic: one shared array per ``cuda.shared.array`` line, whatever
the thread timing, and shared memory poisoned until written.

The race (issue 26). The simulator runs each CUDA thread as a Python thread and finds "the" shared
array of a launch by the source line that asks for it (numba-cuda 0.30.4, ``FakeCUDAShared.array``)::

    res = self._allocations.get(caller)      # thread A: None
    if res is None:                          # <- A preempted here (GIL handed over), B runs the same
        res = np.empty(shape, dtype)         #    three lines, gets None too and stores its array
        self._allocations[caller] = res      # A stores its own: B now writes a private copy

The two threads then hold different arrays for one ``__shared__`` variable: what B writes, nobody
else reads, and what B reads is ``np.empty`` garbage. Python hands the GIL over at a few points in
those lines (after each call) once another thread has waited ``sys.getswitchinterval()``; on a loaded
machine every thread waits longer, so the hand-over lands inside the window more often. That is the
flaky suite: fa2_tc and naive_tc failing 1-4 of 29 cases at random under ``-n 2`` and CPU load, never
alone. ``tests/test_simulator_race.py`` forces the hand-over inside the window: numba's allocator
hands 32 threads two or more arrays, this one always one, and fa2_tc under the same forced
preemption is right here and wrong (an out-of-bounds index from a garbage ``ldmatrix`` address) with
numba's.

The fix: the allocation is done once per (launch, line) under a lock; the caller is found with
``sys._getframe(1)`` (what ``traceback.extract_stack(...)[-2]`` computed, without reading source
lines from disk on every call). New shared arrays are filled with 0xFF bytes (NaN in fp32, fp16 and
bf16; −1 in integers) so that a kernel reading shared memory it never wrote gives NaN, every time,
instead of whatever ``np.empty`` found. Dynamic shared memory (``shape == 0``) is one buffer per
launch already and is left to numba.

``install()`` is idempotent and does nothing unless the simulator is on; ``flush`` (imported by every
kernel module) and ``tensor_core.warp_ops`` (every tensor-core helper) call it when imported.
"""

from __future__ import annotations

import sys
import threading

import numpy as np

from .counting import simulator_enabled

POISON_BYTE = 0xFF
_LOCK = threading.Lock()
#: numba's own allocator, kept by ``install`` (tests/test_simulator_race.py shows its race)
NUMBA_SHARED_ARRAY = None


def _new_array(shape, dtype) -> np.ndarray:
    """A fresh shared array, every byte POISON_BYTE."""
    a = np.empty(shape, dtype)
    a.view(np.uint8).fill(POISON_BYTE)
    return a


def shared_array(self, shape, dtype, alignment=None):
    """FakeCUDAShared.array without the check-then-set race (replaces it in ``install``)."""
    if alignment is not None:
        raise RuntimeError("Array alignment is not supported in cudasim")
    from numba.cuda.simulator import kernelapi  # its own imports of numba's types, as numba resolves them

    if isinstance(dtype, kernelapi.types.Type):
        dtype = kernelapi.numpy_support.as_dtype(dtype)
    if shape == 0:  # dynamic shared memory: one buffer per launch, views of it
        count = self._dynshared_size // dtype.itemsize
        return np.frombuffer(self._dynshared.data, dtype=dtype, count=count)
    frame = sys._getframe(1)
    caller = (frame.f_code.co_filename, frame.f_lineno)
    res = self._allocations.get(caller)
    if res is None:
        with _LOCK:
            res = self._allocations.get(caller)
            if res is None:
                res = _new_array(shape, dtype)
                self._allocations[caller] = res
    return res


def install() -> bool:
    """Replace numba's shared-array allocator with ``shared_array``; True when the simulator is on."""
    if not simulator_enabled():
        return False
    from numba.cuda.simulator import kernelapi

    global NUMBA_SHARED_ARRAY
    if kernelapi.FakeCUDAShared.array is not shared_array:
        NUMBA_SHARED_ARRAY = kernelapi.FakeCUDAShared.array
        kernelapi.FakeCUDAShared.array = shared_array
    return True
