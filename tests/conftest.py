"""Test session setup shared by all test files (kept minimal).

gpu_kernels runs on numba's CUDA simulator unless FLASHIO_GPU=1 (the device run: pytest -m gpu).
The switch must be set before numba is imported anywhere, hence here.
"""

import os
import sys

if os.environ.get("FLASHIO_GPU") != "1":
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
    # The simulator runs a Python thread per CUDA thread plus a busy-polling block manager; a
    # shorter GIL switch interval makes each syncthreads() round several times cheaper.
    sys.setswitchinterval(5e-4)
