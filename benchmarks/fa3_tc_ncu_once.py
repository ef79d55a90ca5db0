"""One fa3_tc launch to profile (issue 22): ``ncu ... python benchmarks/fa3_tc_ncu_once.py G BC OV SW [d] [N]``.

B·H·N = 2¹⁸ (the side by side's workload), bf16, non-causal; the kernel is launched twice (the first
compiles it), so profile with ``--launch-skip 1 --launch-count 1 -k regex:fa3_tc``.
"""

import sys

import numpy as np
from numba import cuda

from gpu_kernels.counting import new_counters
from gpu_kernels.kernels.fa3_tc import Fa3Config, Fa3TcPlan


def main(argv):
    g, bc, ov, sw = (int(x) for x in argv[:4])
    d = int(argv[4]) if len(argv) > 4 else 128
    n = int(argv[5]) if len(argv) > 5 else 4096
    bh = 2**18 // n
    cfg = Fa3Config(d, g, bc, overlap=bool(ov), swizzle=bool(sw)).check()
    plan = Fa3TcPlan.of((1, bh, bh, n, n, d), cfg, "bf16")
    rng = np.random.default_rng(0)
    q, k, v = (cuda.to_device(rng.integers(0x3E00, 0x3F80, bh * n * d, dtype=np.uint16)) for _ in range(3))
    o = cuda.device_array(bh * n * d, np.uint16)
    lse = cuda.device_array(bh * n, np.float32)
    for _ in range(2):
        plan.launch(q, k, v, o, lse, new_counters())
    cuda.synchronize()
    print(cfg.name, "launched twice")


if __name__ == "__main__":
    main(sys.argv[1:])
