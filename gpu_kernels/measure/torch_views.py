"""What the 16-bit side by side and its decode shapes share: numba views of torch tensors, the
check's tolerance, the checked first call and the one line for a variant that could not be timed.

Worked number: bf16's tolerance is 2u = 2·2⁻⁸ = 7.8e-3.

>>> f"{tolerance('bf16'):.2e}", f"{tolerance('fp16'):.2e}"
('7.81e-03', '9.77e-04')
"""

from __future__ import annotations

import os
import time
import traceback

from simlib.units import UNIT_ROUNDOFF


def tolerance(dtype):
    """‖O − ref‖/‖ref‖ allowed: 2u of the dtype (a kernel that rounds P and O once lands near 0.6u)."""
    return 2 * UNIT_ROUNDOFF[dtype]


def bits_view(t):
    """A numba device array of uint16 over a torch bf16/fp16 (or fp32) tensor's memory, no copy."""
    from numba import cuda

    typestr = {2: "<u2", 4: "<f4"}[t.element_size()]
    desc = {
        "shape": (t.numel(),),
        "typestr": typestr,
        "data": (t.data_ptr(), False),
        "version": 3,
        "strides": None,
    }
    return cuda.from_cuda_array_interface(desc, owner=t, sync=False)


def checked_first_call(sh, launch, torch):
    """O poisoned with NaN (an unwritten element fails the check), then the first call (it compiles)
    on input set 0, timed on the host and checked: (ms, ‖O − ref‖/‖ref‖ from ``sh.err``)."""
    sh.out.fill_(float("nan"))
    t0 = time.perf_counter()
    o = launch(0)
    torch.cuda.synchronize()
    ms = (time.perf_counter() - t0) * 1e3
    return ms, sh.err(o, torch)


def not_timed(ex):
    """(the exception in one line, where it was raised) for a variant the run could not time."""
    msg = f"{type(ex).__name__}: {str(ex).splitlines()[0][:160] if str(ex) else ''}"
    at = traceback.extract_tb(ex.__traceback__)[-1]
    return msg, f"{os.path.basename(at.filename)}:{at.lineno}"
