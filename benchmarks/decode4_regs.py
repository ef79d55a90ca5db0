"""Registers and spills of decode_tc's split-kernel timing builds (bf16), the default and version 5's
options, at the timed shapes' packed rows.

    python benchmarks/decode4_regs.py            # on the GPU: from the driver (regs, local memory)
    CUDA_HOME=/usr/local/cuda-13.0 python benchmarks/decode4_regs.py --local   # no GPU: PTX → ptxas -v

``--local`` needs libnvvm and ptxas but not NVRTC: numba-cuda 0.30.4 asks NVRTC for the supported
architectures before it emits PTX and for its path when it loads NVVM; both questions are answered
here for sm_90 (the PTX is then retargeted to sm_90a, as numba does on a 9.x device).
"""

import subprocess
import sys
import tempfile

CASES = [  # (head dim, config keywords, packed rows): the timed shapes' builds
    (128, dict(stages=3), 4),
    (128, dict(stages=3, tail="flagged"), 4),
    (128, dict(stages=3, kv_groups=True), 4),
    (128, dict(stages=3, tail="flagged", kv_groups=True), 4),
    (64, dict(warps=8, block_cols=128, stages=4), 8),
    (64, dict(warps=8, block_cols=128, stages=4, tail="flagged"), 8),
    (64, dict(warps=8, block_cols=128, stages=4, tail="flagged", kv_groups=True), 8),
]


def local_ptxas(cfg, rows):
    from gpu_kernels.kernels.decode_tc import ptx_of

    split, _ = ptx_of(cfg, "bf16", rows, False)
    with tempfile.NamedTemporaryFile("w", suffix=".ptx") as f:
        f.write(split.replace(".target sm_90\n", ".target sm_90a\n"))
        f.flush()
        r = subprocess.run(
            ["ptxas", "-arch=sm_90a", "-v", f.name, "-o", "/dev/null"], capture_output=True, text=True
        )
    if r.returncode:
        return r.stderr.strip().splitlines()[-1]
    lines = [
        x.split("info    : ")[-1].strip() for x in r.stderr.splitlines() if "registers" in x or "spill" in x
    ]
    return "; ".join(lines[-2:])


def main(argv=None):
    local = "--local" in (sys.argv[1:] if argv is None else argv)
    if local:
        from numba.cuda import cuda_paths
        from numba.cuda.cudadrv import nvrtc

        nvrtc.get_supported_ccs = lambda: ((9, 0),)
        cuda_paths._get_nvrtc_path = lambda: ("not needed", None)
    from gpu_kernels.kernels.decode_tc import DecodeConfig, split_kernel, split_signature

    for d, kw, rows in CASES:
        cfg = DecodeConfig(d, **kw).check(rows)
        if local:
            what = local_ptxas(cfg, rows)
        else:
            kern = split_kernel(cfg, "bf16", -(-rows // 16), False, False)
            built = kern.compile(split_signature(cfg.flagged))  # the _Kernel of that signature
            what = f"{built.regs_per_thread} registers, {built.local_mem_per_thread} B local memory"
        print(f"split kernel d = {d} {cfg.name} R = {rows}: {what}", flush=True)


if __name__ == "__main__":
    main()
