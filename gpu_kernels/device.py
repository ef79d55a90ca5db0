"""The machine the kernels run on: numba's CUDA simulator or a real GPU, chosen before numba is imported.

* ``select_backend(simulate)`` sets NUMBA_ENABLE_CUDASIM, imports numba and silences its
  performance warning (small grids on the simulator, host arrays in tests): the one place that does.
* ``require_gpu(what)`` is the check every GPU-only command and the GPU tests make first: a
  ``NoGPU`` error with one line saying so, never a traceback from inside numba.
* ``l2_bytes()``: the device's L2 (for rotating inputs beyond it), the H200 preset's if the device
  does not say.
"""

from __future__ import annotations

import os
import sys
import warnings

from simlib.presets import DEFAULT_GPU


class NoGPU(RuntimeError):
    """No CUDA GPU is usable here (one line for the user)."""


NO_GPU = "no CUDA GPU found; use --simulate to run on numba's CUDA simulator (CPU, slow: keep N and d small)"
NO_GPU_ONLY = "no CUDA GPU found; `{what}` needs a real GPU (only `run --simulate` works without one)"


def silence_performance_warning() -> None:
    """numba warns about grids too small to fill a GPU and about host arrays; both are intended here."""
    from numba.core.errors import NumbaPerformanceWarning

    warnings.simplefilter("ignore", NumbaPerformanceWarning)


def select_backend(simulate: bool):
    """Set the simulator switch, then import numba (never before this point); returns numba.cuda."""
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1" if simulate else "0"
    if simulate:
        # The simulator runs a Python thread per CUDA thread and a polling manager; a short GIL
        # switch interval makes its syncthreads() rounds far cheaper.
        sys.setswitchinterval(5e-4)
    from numba import cuda

    silence_performance_warning()
    return cuda


def gpu_available() -> bool:
    """True if numba (not in simulator mode) finds a usable CUDA GPU; never raises."""
    try:
        from numba import cuda

        return os.environ.get("NUMBA_ENABLE_CUDASIM", "0") in ("", "0") and bool(cuda.is_available())
    except Exception:
        return False


def require_gpu(what: str):
    """numba.cuda on a real GPU, or NoGPU naming the command that needs one."""
    cuda = select_backend(False)
    if not gpu_available():
        raise NoGPU(NO_GPU_ONLY.format(what=what))
    return cuda


def l2_bytes() -> int:
    """The current device's L2 capacity; the H200 preset's (data/hardware/h200.json) if unreadable."""
    try:
        from numba import cuda

        return int(cuda.get_current_device().L2_CACHE_SIZE)
    except Exception:
        from simlib import load_preset

        return int(load_preset(DEFAULT_GPU).level("L2").capacity_bytes)
