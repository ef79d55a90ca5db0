"""Watch a kernel on numba's CUDA simulator: every global and shared element each thread touches,
and the barriers between, so the lab's grader can check a student's counters against what the
kernel really did (GPU-Puzzles' counting proxy, srush/GPU-Puzzles lib.py) and find races.

The kernels count their own accesses (gpu_kernels.counting: one source, counters on or off). On the
simulator this module also *observes* them, independently:

* global arrays are passed as `Watched` arrays (a numba simulator device array whose element reads
  and writes are tallied under the array's name, "Q", "K", "S", ...);
* `cuda.shared.array` returns a `WatchedShared` array while `watching()` is active, named after the
  variable it is assigned to in the kernel's source ("Qs = cuda.shared.array(...)" → "Qs");
* local arrays (registers) are not watched: registers are free (docs/COUNTING.md).

Races: the simulator runs every thread of a block as a Python thread, and a thread's *epoch* is the
number of `cuda.syncthreads()` it has passed. Two accesses to one element from different threads of
a block in the same epoch, at least one of them a write, are a race (nothing orders them on a GPU);
so is a global element one block writes and another block touches in the same launch, and a read of
a shared element no thread of the block has written yet (it holds whatever the last block left).

Worked number: a block of 4 threads copying a 4×2 tile into shared memory, one element each, then
summing it makes 8 global reads and 8 shared writes, and after a barrier 8 shared reads:

>>> tally = Tally("copy")
>>> tally.touch("HBM", "read", "K", 1, (0, 0), n=8)
>>> tally.elements("HBM", "read")
8
"""

from __future__ import annotations

import contextlib
import linecache
import re
import sys
import threading
from collections import Counter
from dataclasses import dataclass, field

import numpy as np

#: At most this many race and uninitialised-read messages are kept per launch.
MAX_MESSAGES = 5
_ASSIGNED = re.compile(r"^\s*(\w+)\s*=\s*cuda\.shared\.array")
_lock = threading.RLock()
_current: Tally | None = None


@dataclass
class _Element:
    """Who last wrote one element (block, thread, epoch) and who read it in the newest epoch."""

    writer: tuple | None = None
    read_block: tuple | None = None
    read_epoch: int = -1
    readers: set = field(default_factory=set)


@dataclass
class Tally:
    """What one launch did: element accesses per (level, op, array) and the races seen."""

    launch: str
    counts: Counter = field(default_factory=Counter)
    races: list[str] = field(default_factory=list)
    uninitialised: list[str] = field(default_factory=list)
    sliced: set[str] = field(default_factory=set)  # arrays the kernel sliced (accesses not followed)
    _state: dict = field(default_factory=dict, repr=False)

    def elements(self, level: str, op: str) -> int:
        """Elements of `level` ("HBM" or "SRAM") read or written (`op`) over all arrays."""
        return sum(n for (lv, o, _), n in self.counts.items() if (lv, o) == (level, op))

    def by_array(self, level: str, op: str) -> dict[str, int]:
        return {name: n for (lv, o, name), n in sorted(self.counts.items()) if (lv, o) == (level, op)}

    def _note(self, where: list[str], text: str) -> None:
        if len(where) < MAX_MESSAGES:
            where.append(text)

    def touch(self, level, op, name, array_id, index, n=1) -> None:
        """Record `n` elements of array `name` read or written by the current simulator thread."""
        thread = threading.current_thread()
        with _lock:
            self.counts[(level, op, name)] += n
            if index is None or not hasattr(thread, "thread_id"):
                return  # a whole-slice access, or a host-side access: counted, not ordered
            block = (thread.blockIdx.x, thread.blockIdx.y, thread.blockIdx.z)
            me, epoch = thread.thread_id, getattr(thread, "_lab_epoch", 0)
            element = self._state.setdefault((array_id, index), _Element())
            where = f"{name}[{', '.join(map(str, index))}]"
            if op == "read":
                self._check_read(level, element, block, me, epoch, where)
                if (element.read_block, element.read_epoch) != (block, epoch):
                    element.read_block, element.read_epoch, element.readers = block, epoch, set()
                element.readers.add(me)
            else:
                self._check_write(level, element, block, me, epoch, where)
                element.writer = (block, me, epoch)

    def _check_read(self, level, element, block, me, epoch, where) -> None:
        if element.writer is None or element.writer[0] != block:
            if level == "SRAM":
                self._note(
                    self.uninitialised, f"thread {me} of block {block} read {where} before its block wrote it"
                )
            elif element.writer is not None:
                self._note(
                    self.races, f"{where}: written by block {element.writer[0]}, read by block {block}"
                )
            return
        _, writer, written = element.writer
        if written == epoch and writer != me:
            self._note(
                self.races,
                f"{where}: thread {writer} wrote it and thread {me} read it with no syncthreads() between "
                f"(block {block})",
            )

    def _check_write(self, level, element, block, me, epoch, where) -> None:
        if element.writer is not None:
            w_block, writer, written = element.writer
            if level == "HBM" and w_block != block:
                self._note(self.races, f"{where}: written by blocks {w_block} and {block} in one launch")
            elif w_block == block and written == epoch and writer != me:
                self._note(
                    self.races,
                    f"{where}: threads {writer} and {me} both wrote it in one epoch (block {block})",
                )
        if element.read_block == block and element.read_epoch == epoch and element.readers - {me}:
            reader = min(element.readers - {me})
            self._note(
                self.races,
                f"{where}: thread {reader} read it and thread {me} overwrote it with no syncthreads() between "
                f"(block {block})",
            )


def _index(index, shape):
    """The element an integer index names, as a tuple of non-negative ints; None for a slice."""
    parts = index if isinstance(index, tuple) else (index,)
    if len(parts) != len(shape) or not all(isinstance(p, (int, np.integer)) for p in parts):
        return None
    return tuple(int(p) % s for p, s in zip(parts, shape))


def _size(result) -> int:
    return int(np.size(result)) if isinstance(result, np.ndarray) else 1


def _sliced(name) -> None:
    tally = _current
    if tally is not None:
        with _lock:
            tally.sliced.add(name)


def _report(level, op, name, array_id, shape, index, result) -> None:
    tally = _current
    if tally is not None:
        tally.touch(level, op, name, array_id, _index(index, shape), _size(result))


class WatchedShared(np.ndarray):
    """A shared-memory array whose element reads and writes are reported to the current launch."""

    _lab_name = "shared"

    def __getitem__(self, index):
        result = super().__getitem__(index)
        if isinstance(result, np.ndarray):  # a slice: a view the audit cannot follow
            _sliced(self._lab_name)
            return result.view(np.ndarray)
        _report("SRAM", "read", self._lab_name, id(self), self.shape, index, result)
        return result

    def __setitem__(self, index, value):
        super().__setitem__(index, value)
        _report(
            "SRAM", "write", self._lab_name, id(self), self.shape, index, np.ndarray.__getitem__(self, index)
        )


def watched_array(host: np.ndarray, name: str):
    """`host` as a simulator device array (a copy) whose element accesses count as HBM traffic of `name`."""
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    class Watched(FakeCUDAArray):
        def __getitem__(self, index):
            result = self._ary[index]
            if isinstance(result, np.ndarray):
                _sliced(name)
                return FakeCUDAArray(result)
            _report("HBM", "read", name, id(self), self._ary.shape, index, result)
            return result

        def __setitem__(self, index, value):
            self._ary[index] = value
            _report("HBM", "write", name, id(self), self._ary.shape, index, self._ary[index])

    return Watched(np.array(host, copy=True))


def _shared_name(frame) -> str:
    line = linecache.getline(frame.f_code.co_filename, frame.f_lineno)
    match = _ASSIGNED.match(line)
    return match.group(1) if match else f"shared@{frame.f_lineno}"


@contextlib.contextmanager
def watching():
    """While active, `cuda.shared.array` hands out watched arrays and barriers advance the epochs.
    Simulator only (numba's CUDA simulator must be in use)."""
    from numba.core import types
    from numba.cuda.simulator import kernel as sim_kernel
    from numba.cuda.simulator import kernelapi
    from numba.np import numpy_support

    shared_array = kernelapi.FakeCUDAShared.array
    barrier = sim_kernel.BlockThread.syncthreads

    def array(self, shape, dtype):
        if shape == 0:  # dynamic shared memory: not watched (the lab's kernels use none)
            return shared_array(self, shape, dtype)
        if isinstance(dtype, types.Type):
            dtype = numpy_support.as_dtype(dtype)
        frame = sys._getframe(1)
        caller = (frame.f_code.co_filename, frame.f_lineno)  # the simulator's own key for an allocation
        with _lock:  # every thread of the block asks; the first allocates, all must get the same array
            found = self._allocations.get(caller)
            if found is None:
                found = np.empty(shape, dtype).view(WatchedShared)
                found._lab_name = _shared_name(frame)
                self._allocations[caller] = found
        return found

    def syncthreads(thread):
        barrier(thread)
        thread._lab_epoch = getattr(thread, "_lab_epoch", 0) + 1

    kernelapi.FakeCUDAShared.array = array
    sim_kernel.BlockThread.syncthreads = syncthreads
    try:
        yield
    finally:
        kernelapi.FakeCUDAShared.array = shared_array
        sim_kernel.BlockThread.syncthreads = barrier


@contextlib.contextmanager
def launch(name: str):
    """Tally the accesses of the launches made inside the block (yields the `Tally`)."""
    global _current
    tally = Tally(name)
    _current = tally
    try:
        yield tally
    finally:
        _current = None
