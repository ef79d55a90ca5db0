"""What the 16-bit side by side and its decode shapes share: numba views of torch tensors, the
check's tolerance.

Worked number: bf16's tolerance is 2u = 2·2⁻⁸ = 7.8e-3.

>>> f"{tolerance('bf16'):.2e}", f"{tolerance('fp16'):.2e}"
('7.81e-03', '9.77e-04')
"""

from __future__ import annotations

from ..tensor_core.dtypes import UNIT_ROUNDOFF


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
