"""Registers and local memory (spills) of decode_tc's timing builds, read from the driver on the GPU
(decode4: the local ptxas route needs NVRTC, which this project's CPU machine lacks).

    python benchmarks/decode4_regs.py
"""

from gpu_kernels.kernels.decode_tc import DecodeConfig, split_kernel, split_signature

CASES = [  # (config, packed rows): the timed shapes' builds, the atomic and the flagged tail
    (DecodeConfig(128, stages=3), 4),
    (DecodeConfig(128, stages=3, tail="flagged"), 4),
    (DecodeConfig(64, 8, 128, 4), 8),
    (DecodeConfig(64, 8, 128, 4, tail="flagged"), 8),
]

for cfg, rows in CASES:
    kern = split_kernel(cfg.check(rows), "bf16", -(-rows // 16), False, False)
    sig = split_signature(cfg.flagged)
    built = kern.compile(sig)  # the _Kernel of that signature
    regs, local = built.regs_per_thread, built.local_mem_per_thread
    print(f"split kernel d = {cfg.head_dim} {cfg.name} R = {rows}: {regs} registers, {local} B local memory")
