"""Two measurements the physical model's misses ask for (docs/ARCHITECTURE.md, lecture 5).

1. Effective L2 capacity for re-reads: read a buffer of F bytes repeatedly (cupy sum, read-only)
   and time it with CUDA events, F from 8 to 128 MiB. While the buffer fits in what L2 keeps for
   re-reads, the time per byte is L2's; past it, DRAM's. The knee is the capacity a reuse-distance
   model should use (the H200 has 60 MiB of L2 in two partitions).
2. The tiled kernel's SASS on this machine (d = 64 and 128, default blocks): how many shared-memory
   loads (LDS) the compiled loops really issue, to compare with the model's one LDS per counted read.

    python3 benchmarks/h200_diagnostics.py      # files under $OUT (or data/measurements)
"""
import os
import re
import statistics
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpu_kernels.provenance import provenance, write_csv_atomic, write_json_atomic  # noqa: E402

OUT = os.environ.get("OUT") or "data/measurements"


def l2_probe(sizes_mib=tuple(range(8, 129, 4)), reps=25):
    import cupy as cp

    rows = []
    start, stop = cp.cuda.Event(), cp.cuda.Event()
    for mib in sizes_mib:
        x = cp.random.standard_normal(mib * 2**20 // 4, dtype=cp.float32)
        x.sum()                                   # warm-up: compile, and bring x into L2 if it fits
        times = []
        for _ in range(reps):
            start.record()
            x.sum()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) * 1e-3)
        t = statistics.median(times)
        rows.append({"footprint_mib": mib, "median_s": t, "read_gbps": mib * 2**20 / t / 1e9, "reps": reps})
        del x
    return rows


def tiled_sass(head_dim):
    from numba import cuda

    from gpu_kernels.checks import default_blocks
    from gpu_kernels.reference import random_qkv
    from gpu_kernels.tiled import fa2_kernel, run_tiled

    br, bc = default_blocks(4096, head_dim)
    q, k, v = random_qkv(1, 1, 256, head_dim)
    run_tiled(q, k, v, block_rows=br, block_cols=bc)
    cuda.synchronize()
    kernel = fa2_kernel(head_dim, br, bc, False, False)
    sass = "\n".join(kernel.inspect_sass().values()) if isinstance(kernel.inspect_sass(), dict) else kernel.inspect_sass()
    counts = {op: len(re.findall(rf"\b{op}(\.\w+)*\b", sass)) for op in ("LDS", "STS", "LDG", "STG", "FFMA", "LDL", "STL")}
    return sass, {"head_dim": head_dim, "block_rows": br, "block_cols": bc, **counts}


def main():
    os.makedirs(OUT, exist_ok=True)
    rows = l2_probe()
    write_csv_atomic(os.path.join(OUT, "l2_capacity_h200.csv"), rows, list(rows[0]))
    sass_rows = []
    for d in (64, 128):
        sass, summary = tiled_sass(d)
        with open(os.path.join(OUT, f"sass_tiled_d{d}.txt"), "w") as f:
            f.write(sass)
        sass_rows.append(summary)
    write_json_atomic(os.path.join(OUT, "l2_capacity_h200.provenance.json"), provenance({
        "what": "L2 effective capacity probe (cupy sum over F bytes, CUDA events, median) and the "
                "tiled kernel's SASS instruction counts",
        "sass_counts": sass_rows}))
    print(f"{'MiB':>5} {'GB/s':>9}")
    for r in rows:
        print(f"{r['footprint_mib']:>5} {r['read_gbps']:>9.0f}")
    for s in sass_rows:
        print(s)


if __name__ == "__main__":
    main()
