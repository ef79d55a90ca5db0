"""Measurements the physical model's misses ask for (docs/L2_INVESTIGATION.md, appendix 05b of lecture 5).

1. L2 re-reads, timed: one kernel reads a buffer of F bytes PASSES times over (grid-stride, so
   between two reads of an element the whole buffer is touched: reuse distance F), CUDA events,
   F from 8 to 128 MiB (`l2_capacity_h200.csv`).
2. L2 re-reads under ncu (`--ncu-driver`, `--shuffled-ncu-driver`): DRAM bytes per footprint with
   each element re-read by its own thread, by a block 131 blocks away (`--rotating`), or by a
   random block each pass (every line read from both L2 partitions, as K/V tiles are).
3. The readable tiled kernel under ncu at N = 8K–20K (`--tiled-ncu-driver`) and with 1–3 heads
   (`--heads`): how much of a cut head's K/V re-read the L2 serves.
4. The tiled kernel's SASS on this machine (d = 64 and 128, default blocks): which shared-memory
   loads the compiled loops issue (LDS.128 for Q, K and V rows).

    python3 benchmarks/h200_diagnostics.py [--probe-only | --sass-only]   # files under $OUT
    ncu --metrics dram__bytes_read.sum,... python3 benchmarks/h200_diagnostics.py --ncu-driver [--rotating]
    (benchmarks/l2_sharing_run.sh, l2_shuffled_run.sh and l2_heads_run.sh run 2-4 with ncu)
"""

import os
import re
import statistics
import sys

import numpy as np
from numba import cuda, float32  # module globals: the CUDA simulator swaps `cuda` in a kernel's globals

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# what the ncu drivers launch, in one place with its reader (appendix 05b reads them there too)
from evidence.l2_evidence import NCU_PASSES, NCU_SIZES_MIB, TILED_HEADS_NCU_SHAPES, TILED_NCU_SHAPES
from measurements.provenance import csv_text, provenance, write_measurement  # noqa: E402
from simlib.kernel_layout import tiled_default_blocks  # noqa: E402

OUT = os.environ.get("OUT", "")  # the run folder the device returns (required where files are written)


PASSES = 32


def _reread_kernel():
    @cuda.jit
    def reread(x, out, passes):
        # four independent accumulators keep four loads in flight per thread
        start = cuda.grid(1) * 4
        stride = cuda.gridsize(1) * 4
        a0 = float32(0.0)
        a1 = float32(0.0)
        a2 = float32(0.0)
        a3 = float32(0.0)
        for _ in range(passes):
            for i in range(start, x.shape[0] - 3, stride):
                a0 += x[i]
                a1 += x[i + 1]
                a2 += x[i + 2]
                a3 += x[i + 3]
        out[cuda.grid(1)] = a0 + a1 + a2 + a3  # keeps the loads alive

    return reread


#: Blocks between the reader of an element in one pass and its reader in the next (rotating probe)
ROTATE_BLOCKS = 131


def _reread_rotating_kernel():
    """The same re-read, but in pass p thread g reads what thread g + p·ROTATE_BLOCKS·256 read in
    pass 0: every element is read by a block 131 blocks away each pass (another SM, and with the
    round-robin block placement SMs of both L2 partitions), as the tiled kernel's K/V tiles are
    read by every block of a head. The L1 of the previous reader cannot serve it, so every re-read
    reaches L2; a line homed in one partition and read from the other may be held in both."""

    @cuda.jit
    def reread_rotating(x, out, passes):
        g = cuda.grid(1)
        threads = cuda.gridsize(1)
        stride = threads * 4
        a0 = float32(0.0)
        a1 = float32(0.0)
        a2 = float32(0.0)
        a3 = float32(0.0)
        for p in range(passes):
            start = ((g + p * ROTATE_BLOCKS * cuda.blockDim.x) % threads) * 4
            for i in range(start, x.shape[0] - 3, stride):
                a0 += x[i]
                a1 += x[i + 1]
                a2 += x[i + 2]
                a3 += x[i + 3]
        out[g] = a0 + a1 + a2 + a3

    return reread_rotating


#: Blocks of the shuffled probe: F/1024 bytes per block and pass (F a multiple of 4 MiB)
SHUFFLE_BLOCKS = 1024


def _reread_shuffled_kernel():
    """The re-read with the buffer cut into SHUFFLE_BLOCKS chunks; in pass p block b reads chunk
    order[p, b], a fresh random permutation per pass. Each line's next reader runs on a random SM,
    so over the passes every line is read from SMs of both L2 partitions, as the tiled kernel's K/V
    tiles are (every block of a head reads them). Reuse distance still F."""

    @cuda.jit
    def reread_shuffled(x, order, out, passes):
        chunk = x.shape[0] // order.shape[1]
        t = cuda.threadIdx.x * 4
        step = cuda.blockDim.x * 4
        a0 = float32(0.0)
        a1 = float32(0.0)
        a2 = float32(0.0)
        a3 = float32(0.0)
        for p in range(passes):
            start = order[p, cuda.blockIdx.x] * chunk
            for i in range(start + t, start + chunk - 3, step):
                a0 += x[i]
                a1 += x[i + 1]
                a2 += x[i + 2]
                a3 += x[i + 3]
        out[cuda.grid(1)] = a0 + a1 + a2 + a3

    return reread_shuffled


def l2_probe(sizes_mib=tuple(range(8, 129, 4)), reps=7):
    kernel = _reread_kernel()
    blocks, threads = 132 * 8, 256
    out = cuda.device_array(blocks * threads, dtype=np.float32)
    rows = []
    for mib in sizes_mib:
        x = cuda.to_device(np.random.default_rng(mib).standard_normal(mib * 2**20 // 4).astype(np.float32))
        kernel[blocks, threads](x, out, 1)  # compile and warm up
        times = []
        for _ in range(reps):
            start, stop = cuda.event(), cuda.event()
            start.record()
            kernel[blocks, threads](x, out, PASSES)
            stop.record()
            stop.synchronize()
            times.append(cuda.event_elapsed_time(start, stop) * 1e-3)
        t = statistics.median(times)
        rows.append(
            {
                "footprint_mib": mib,
                "passes": PASSES,
                "median_s": t,
                "read_gbps": PASSES * mib * 2**20 / t / 1e9,
                "reps": reps,
            }
        )
        del x
    return rows


def tiled_sass(head_dim):
    from gpu_kernels.kernels.tiled import fa2_kernel, run_tiled
    from gpu_kernels.reference import random_qkv

    br, bc = tiled_default_blocks(4096, head_dim)
    q, k, v = random_qkv(1, 1, 256, head_dim)
    run_tiled(q, k, v, block_rows=br, block_cols=bc)
    cuda.synchronize()
    kernel = fa2_kernel(head_dim, br, bc, False, False)
    sass = (
        "\n".join(kernel.inspect_sass().values())
        if isinstance(kernel.inspect_sass(), dict)
        else kernel.inspect_sass()
    )
    counts = {
        op: len(re.findall(rf"\b{op}(\.\w+)*\b", sass))
        for op in ("LDS", "STS", "LDG", "STG", "FFMA", "LDL", "STL")
    }
    return sass, {"head_dim": head_dim, "block_rows": br, "block_cols": bc, **counts}


def shuffled_ncu_driver():
    """ncu_driver for the shuffled probe (the first launch, on 4 MiB, only compiles)."""
    kernel = _reread_shuffled_kernel()
    threads = 256
    out = cuda.device_array(SHUFFLE_BLOCKS * threads, dtype=np.float32)
    rng = np.random.default_rng(2026)
    order = cuda.to_device(np.stack([rng.permutation(SHUFFLE_BLOCKS) for _ in range(NCU_PASSES)]))
    for mib in (4,) + NCU_SIZES_MIB:
        x = cuda.to_device(np.random.default_rng(mib).standard_normal(mib * 2**20 // 4).astype(np.float32))
        kernel[SHUFFLE_BLOCKS, threads](x, order, out, NCU_PASSES)
        cuda.synchronize()
        del x


def ncu_driver(rotating=False):
    """One launch per footprint, for `ncu --metrics dram__bytes_read.sum` (the first launch, on
    1 MiB, only compiles). DRAM bytes / (passes · F) is the fraction of re-reads L2 did not serve.
    `rotating`: each pass reads every element from another block (see _reread_rotating_kernel)."""
    kernel = _reread_rotating_kernel() if rotating else _reread_kernel()
    blocks, threads = 132 * 8, 256
    out = cuda.device_array(blocks * threads, dtype=np.float32)
    for mib in (1,) + NCU_SIZES_MIB:
        x = cuda.to_device(np.random.default_rng(mib).standard_normal(mib * 2**20 // 4).astype(np.float32))
        kernel[blocks, threads](x, out, NCU_PASSES)
        cuda.synchronize()
        del x


def tiled_ncu_driver(shapes=None):
    """One launch of the readable kernel per (N, d, H) (default: TILED_NCU_SHAPES with H = 4),
    for ncu --kernel-name regex:fa2."""
    from gpu_kernels.kernels.tiled import run_tiled
    from gpu_kernels.reference import random_qkv

    for n, d, h in shapes or [(n, d, 4) for n, d in TILED_NCU_SHAPES]:
        q, k, v = random_qkv(1, h, n, d)
        run_tiled(q, k, v)


#: (N, d, H) of the traced launches: when and on which SM each block of the readable kernel ran
TRACE_SHAPES = ((16384, 128, 1), (16384, 128, 2), (16384, 128, 4), (16384, 64, 4))


def tiled_trace(n, d, heads):
    """One traced launch of the readable kernel (default blocks, after a warm-up launch): a table
    with one row per block (head, query block i, SM, start and end in ns from the first start)."""
    import dataclasses

    import pandas as pd

    from gpu_kernels.kernels.tiled import plan_tiled
    from gpu_kernels.reference import random_qkv

    q, k, v = random_qkv(1, heads, n, d)
    plan = dataclasses.replace(plan_tiled(q, k, v), trace=True)
    tr, bh = plan.grid
    dq, dk, dv = (cuda.to_device(x.reshape(heads, n, d)) for x in (q, k, v))
    do = cuda.device_array((heads, n, d), np.float32)
    dl = cuda.device_array((heads, n), np.float32)
    for _ in range(2):  # the first launch compiles
        counters = cuda.to_device(np.zeros(4 + 3 * tr * bh, np.int64))
        plan.launch(dq, dk, dv, do, dl, counters)
        cuda.synchronize()
    rec = counters.copy_to_host()[4:].reshape(bh * tr, 3)
    block = np.arange(bh * tr)
    t0 = rec[:, 1].min()
    return pd.DataFrame(
        {
            "N": n,
            "d": d,
            "H": heads,
            "block_rows": plan.block_rows,
            "head": block // tr,
            "i": block % tr,
            "sm": rec[:, 0],
            "start_ns": rec[:, 1] - t0,
            "end_ns": rec[:, 2] - t0,
        }
    )


def main():
    drivers = ("--tiled-ncu-driver", "--shuffled-ncu-driver", "--ncu-driver")
    if not OUT and not any(flag in sys.argv for flag in drivers):
        sys.exit("error: set OUT to the folder for the files (e.g. $OUT on the device machine)")
    if "--trace" in sys.argv:
        import pandas as pd

        table = pd.concat([tiled_trace(*shape) for shape in TRACE_SHAPES], ignore_index=True)
        os.makedirs(OUT, exist_ok=True)
        write_measurement(
            os.path.join(OUT, "tiled_trace_h200.csv"),
            table.to_csv(index=False),
            provenance(
                {
                    "what": "the readable kernel's trace build (thread 0 of each block records the SM id and the GPU "
                    f"clock at the block's start and end), default blocks, B=1, shapes (N, d, H) {TRACE_SHAPES}; "
                    "the second of two launches"
                }
            ),
        )
        print(
            table.groupby(["N", "d", "H"])
            .agg(blocks=("i", "size"), sms=("sm", "nunique"), ms=("end_ns", lambda e: e.max() / 1e6))
            .to_string()
        )
        return
    if "--tiled-ncu-driver" in sys.argv:
        tiled_ncu_driver(TILED_HEADS_NCU_SHAPES if "--heads" in sys.argv else None)
        return
    if "--shuffled-ncu-driver" in sys.argv:
        shuffled_ncu_driver()
        return
    if "--ncu-driver" in sys.argv:
        ncu_driver(rotating="--rotating" in sys.argv)
        return
    os.makedirs(OUT, exist_ok=True)
    if "--sass-only" not in sys.argv:
        rows = l2_probe()
        write_measurement(
            os.path.join(OUT, "l2_capacity_h200.csv"),
            csv_text(rows, list(rows[0])),
            provenance(
                {
                    "what": "L2 effective capacity probe: a numba kernel reading F bytes PASSES times "
                    "(grid-stride, reuse distance F), CUDA events, median of reps"
                }
            ),
        )
        for r in rows:
            print(f"{r['footprint_mib']:>5} MiB {r['read_gbps']:>9.0f} GB/s")
    if "--probe-only" not in sys.argv:
        write_sass()


def write_sass():
    """sass_tiled_d{64,128}.txt, each with its sidecar (its instruction counts under sass_counts)."""
    for d in (64, 128):
        sass, summary = tiled_sass(d)
        write_measurement(
            os.path.join(OUT, f"sass_tiled_d{d}.txt"),
            sass,
            provenance(
                {
                    "what": "the readable tiled kernel's SASS on this GPU (default blocks, timing build)",
                    "sass_counts": summary,
                }
            ),
        )
        print(summary)


if __name__ == "__main__":
    main()
