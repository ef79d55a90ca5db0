"""Where decode_tc's cluster tail loses (decode5, run decode5-run2): how the GPU places clusters of the
decode grids, and the cluster step at other split counts and with one block per SM forced.

    python benchmarks/decode5_cluster_probe.py --out DIR

Part A (placement): a kernel of the decode grid's shape (grid (s, units), the split kernel's threads and
dynamic shared memory) whose thread 0 of each block records its SM (%smid) and %globaltimer at its start,
spins SPIN_NS, and records the time again; with and without ``.reqnctapercluster s`` (cluster_ops). Per
case: distinct SMs used, most blocks on one SM, the spread of block starts (a second wave shows as a
spread of about SPIN_NS) and the kernel's span; and cuOccupancyMaxActiveClusters where the driver answers.
Part B (time): the 134 MB d = 128 step (B = 1, H = 32/8, L = 32768), atomic and cluster tails at s = 4, 8,
16, and the cluster step at s = 16 with its dynamic shared memory padded past half an SM's (one block
per SM); checked against fp32 attention before timing, medians of queued launches (decode side by side's
way). Writes decode5_cluster_probe.csv (+ provenance) and prints both tables.
"""

from __future__ import annotations

import argparse
import csv
import io
import statistics
import sys

SPIN_NS = 20_000
FIELDS = ["part", "case", "grid", "threads", "smem", "cluster", "value", "note"]


def placement_kernel(cluster: int):
    from llvmlite import ir
    from numba import cuda
    from numba.cuda import types
    from numba.cuda.extending import intrinsic

    from gpu_kernels.tensor_core.cluster_ops import cluster_ops

    def reader(text, ty):
        @intrinsic
        def op(typingctx):
            def codegen(context, builder, signature, args):
                irt = ir.IntType(64 if ty is types.uint64 else 32)
                fnty = ir.FunctionType(irt, [])
                return builder.call(
                    ir.InlineAsm(fnty, text, "=l" if irt.width == 64 else "=r", side_effect=True), []
                )

            return ty(), codegen

        return op

    now = reader("mov.u64 $0, %globaltimer;", types.uint64)
    smid = reader("mov.u32 $0, %smid;", types.uint32)
    shape = cluster_ops(max(1, cluster), False).cluster_shape
    CL = cluster

    def probe(out, spin):
        if CL:
            shape()
        sm = cuda.shared.array(0, types.uint8)
        b = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
        if cuda.threadIdx.x == 0:
            t0 = now()
            sm[0] = 1
            t = t0
            while t - t0 < spin:
                t = now()
            out[3 * b] = smid()
            out[3 * b + 1] = t0
            out[3 * b + 2] = t
        cuda.syncthreads()

    return cuda.jit(probe)


def max_active_clusters(kern, grid, threads, smem, cluster):
    from numba.cuda.cudadrv.driver import binding

    try:
        fn = kern._codelibrary.get_cufunc().handle
        if not isinstance(fn, binding.CUfunction):
            err, fn = binding.cuKernelGetFunction(fn)
        cfg = binding.CUlaunchConfig()
        cfg.gridDimX, cfg.gridDimY, cfg.gridDimZ = grid[0], grid[1], 1
        cfg.blockDimX, cfg.blockDimY, cfg.blockDimZ = threads, 1, 1
        cfg.sharedMemBytes = smem
        attr = binding.CUlaunchAttribute()
        attr.id = binding.CUlaunchAttributeID.CU_LAUNCH_ATTRIBUTE_CLUSTER_DIMENSION
        attr.value.clusterDim.x, attr.value.clusterDim.y, attr.value.clusterDim.z = cluster, 1, 1
        cfg.attrs, cfg.numAttrs = [attr], 1
        err, n = binding.cuOccupancyMaxActiveClusters(fn, cfg)
        return f"{n}" if int(err) == 0 else f"error {err}"
    except Exception as exc:  # the answer is a note, not the end of the run
        return f"not answered: {type(exc).__name__}: {exc}"[:200]


def part_a(rows):
    import numpy as np
    from numba import cuda

    from gpu_kernels.kernels.decode_tc import allow_dynamic_smem
    from gpu_kernels.tensor_core.cluster_ops import allow_cluster

    cases = [  # (name, grid, threads, dynamic smem): the decode grids of run decode5-run1
        ("134MB d128 s16 w4", (16, 8), 128, 102400),
        ("134MB d128 s16 w4 padded", (16, 8), 128, 120000),
        ("134MB d64 s4 w8", (4, 32), 256, 133120),
        ("134MB d64 s4 w4", (4, 32), 128, 67584),
    ]
    from numba.cuda import types

    sig = (types.Array(types.uint64, 1, "C"), types.int64)
    for name, grid, threads, smem in cases:
        for cl in (0, grid[0]):
            kern = placement_kernel(cl)
            allow_dynamic_smem(kern, smem, sig)
            allow_cluster(kern, cl, sig)
            n = grid[0] * grid[1]
            out = cuda.to_device(np.zeros(3 * n, np.uint64))
            for _ in range(3):  # warm, then the last launch is read
                kern[grid, threads, 0, smem](out, SPIN_NS)
            cuda.synchronize()
            a = out.copy_to_host().reshape(n, 3).astype(np.int64)
            sms, starts, ends = a[:, 0], a[:, 1], a[:, 2]
            per_sm = np.bincount(sms)
            note = (
                f"{len(set(sms.tolist()))} SMs, at most {per_sm.max()} blocks on one; starts spread "
                f"{(starts.max() - starts.min()) / 1e3:.1f} us, span {(ends.max() - starts.min()) / 1e3:.1f} us"
            )
            if cl:
                note += (
                    f"; max active clusters {max_active_clusters(kern.compile(sig), grid, threads, smem, cl)}"
                )
            rows.append(
                dict(part="placement", case=name, grid=f"{grid[0]}x{grid[1]}", threads=threads, smem=smem,
                     cluster=cl, value=f"{(ends.max() - starts.min()) / 1e3:.2f}", note=note)
            )  # fmt: skip
            print(f"{name:26s} cluster {cl:2d}: {note}", flush=True)


def part_b(rows):
    import dataclasses

    import torch

    from gpu_kernels.counting import new_counters
    from gpu_kernels.kernels.decode_tc import DecodePlan, allow_dynamic_smem, default_config, split_signature
    from gpu_kernels.measure.decode_side_by_side import DecodeShape, queued_times
    from gpu_kernels.measure.torch_views import bits_view, checked_first_call, tolerance

    b, h, hkv, n, d, ql = 1, 32, 8, 32768, 128, 1
    sh = DecodeShape("bf16", b, h, hkv, ql, n, d, torch)
    counters = new_counters()
    for tail, s, pad in (("atomic", 16, 0), ("cluster", 16, 0), ("cluster", 16, 120000), ("atomic", 8, 0),
                         ("cluster", 8, 0), ("atomic", 4, 0), ("cluster", 4, 0)):  # fmt: skip
        cfg = dataclasses.replace(default_config(d), tail=tail)
        plan = DecodePlan((b, h, hkv, ql, n, d), cfg.check(4, s), "bf16", s)
        n_part, n_lse = plan.partial_sizes()
        pv = bits_view(torch.empty(n_part, device="cuda", dtype=torch.float32))
        lv = bits_view(torch.empty(n_lse, device="cuda", dtype=torch.float32))
        if pad:  # the same kernel, launched with more dynamic shared memory than it uses
            split, _ = plan.kernels()
            plan.launch_split(*sh.views[0], sh.o_view, pv, lv, counters)  # compiles, sets the attributes
            allow_dynamic_smem(split, pad, split_signature())
            from gpu_kernels.kernels.decode_tc import arrival_counts

            arr = arrival_counts(plan.units)

            def launch(i, split=split, plan=plan, pv=pv, lv=lv, arr=arr, pad=pad):
                split[(plan.splits_made, plan.units), plan.config.threads, 0, pad](
                    *sh.views[i], sh.o_view, pv, lv, counters, arr, n, plan.chunk, plan.splits_made, plan.rows
                )
                return sh.out
        else:

            def launch(i, plan=plan, pv=pv, lv=lv):
                plan.launch(*sh.views[i], sh.o_view, pv, lv, counters)
                return sh.out

        _, err = checked_first_call(sh, launch, torch)
        t, reps, ahead = queued_times(launch, sh.n_sets, torch)
        med = statistics.median(t) * 1e3
        ok = err < tolerance("bf16")
        name = f"{tail} s={s}" + (f" smem {pad}" if pad else "")
        rows.append(dict(part="step_134MB_d128", case=name, grid=f"{s}x8", threads=128,
                         smem=pad or plan.smem_bytes, cluster=plan.cluster, value=f"{med:.2f}",
                         note=f"err {err:.2e} ok {ok}; {reps} reps" + ("" if ahead else "; CPU behind")))  # fmt: skip
        print(f"step 134 MB d=128 {name:24s} {med:8.2f} us  err {err:.1e}{'' if ok else ' FAIL'}", flush=True)


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    a = p.parse_args(argv)
    from gpu_kernels.device import select_backend

    select_backend(False)
    rows: list = []
    try:
        part_a(rows)
    except Exception as exc:
        print(f"placement failed: {type(exc).__name__}: {exc}", flush=True)
    part_b(rows)
    from measurements.provenance import provenance, write_measurement

    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=FIELDS)
    w.writeheader()
    w.writerows(rows)
    write_measurement(
        f"{a.out}/decode5_cluster_probe.csv",
        buf.getvalue(),
        provenance(
            {
                "what": "decode_tc's cluster tail: placement of the grids, steps at other splits",
                "argv": sys.argv,
            }
        ),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
