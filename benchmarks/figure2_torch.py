"""Figure 2 (left) of the FlashAttention paper, measured on this GPU with PyTorch.

The paper's configuration (Dao-AILab/flash-attention, benchmarks/benchmark_flash_attention.py at
commit 9dbc491a, May 2022): B = 64, H = 16, N = 1024, d = 64, fp16, non-causal, dropout 0.1, a
key-padding mask with lengths drawn from [N - 20, N), FlashAttention on the unpadded tokens.
One step = forward + backward with a fixed random dO (gradients freshly allocated, so no
accumulation kernel), for each variant:

* ``standard``     the reference implementation as `attention_ref` writes it: einsum with K
                   pre-scaled by 1/sqrt(d), masked_fill_ of the padded keys, softmax, F.dropout,
                   einsum; q, k, v unbound from one packed (B, N, 3, H, d) tensor;
* ``fa2_varlen``   PyTorch's FlashAttention-2 kernels on the unpadded tokens (cu_seqlens), through
                   ``torch.ops.aten._flash_attention_forward`` (``torch.nn.attention.varlen`` has
                   no dropout argument);
* ``fa2_sdpa``     ``scaled_dot_product_attention`` under ``sdpa_kernel(SDPBackend.FLASH_ATTENTION)``
                   on the padded batch: that backend takes no mask, so it attends to every key
                   (a different function, recorded for the traffic of the public API);

each with dropout 0.1 and 0.0. Order: (1) correctness with dropout off against a float64
reference on fresh inputs (B = 8, the same N, H, d and mask rule); (2) CUDA-event wall time of
the step, median of many after warm-up (one packed qkv is 403 MB, 6.4× the 60 MiB L2, so inputs
need no rotation); (3) one step of each variant under Nsight Compute (``--cache-control all``,
``--clock-control none``): DRAM bytes read and written and L2 sectors summed over every kernel
of the step. Writes under --out: figure2_h200.csv (one row per variant), figure2_h200_kernels.csv
(one row per kernel under ncu), figure2_h200_check.csv, each with a .provenance.json sidecar.

Usage on the device: python3 benchmarks/figure2_torch.py --out $OUT
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import subprocess
import sys
import time

import torch
import torch.nn.functional as F

B, H, N, D = 64, 16, 1024, 64
PAD_RANGE = 20  # lengths drawn from [N - 20, N), as torch.randint(seqlen - 20, seqlen) in the 2022 script
DROPOUT = 0.1
VARIANTS = [(impl, p) for impl in ("standard", "fa2_varlen", "fa2_sdpa") for p in (DROPOUT, 0.0)]
NCU_VERSION = []  # what `ncu --version` said, for the provenance
MARKER = "spin_kernel"  # torch.cuda._sleep's kernel: separates the variants' steps under ncu
METRICS = [
    "dram__bytes_read.sum",
    "dram__bytes_write.sum",
    "lts__t_sectors_op_read.sum",
    "lts__t_sectors_op_write.sum",
    "gpu__time_duration.sum",
]


def lengths_and_mask(batch, seq_len, gen):
    lengths = torch.randint(seq_len - PAD_RANGE, seq_len, (batch,), device="cuda", generator=gen)
    mask = torch.arange(seq_len, device="cuda")[None, :] < lengths[:, None]  # (B, N): True = real token
    cu = torch.zeros(batch + 1, dtype=torch.int32, device="cuda")
    cu[1:] = torch.cumsum(lengths, 0).to(torch.int32)
    return lengths, mask, cu


def attention_ref(qkv, attn_mask, dropout_p, causal=False):
    """The 2022 script's standard attention: (B, N, 3, H, d) packed qkv, (B, N) key mask; with
    `causal`, its second masked_fill_ of the keys after each query (benchmarks/eager16_h200.py)."""
    q, k, v = qkv.unbind(dim=2)
    scores = torch.einsum("bthd,bshd->bhts", q, k / math.sqrt(qkv.shape[-1]))
    scores.masked_fill_(~attn_mask[:, None, None, :], float("-inf"))
    if causal:
        n = qkv.shape[1]
        scores.masked_fill_(
            torch.triu(torch.ones(n, n, dtype=torch.bool, device=qkv.device), 1), float("-inf")
        )
    attention = torch.softmax(scores, dim=-1)
    attention_drop = F.dropout(attention, dropout_p)
    return torch.einsum("bhts,bshd->bthd", attention_drop, v)


class _VarlenExplicit(torch.autograd.Function):
    """The varlen kernels with the backward op called by name (if the forward op has no autograd)."""

    @staticmethod
    def forward(ctx, q, k, v, cu, max_len, dropout_p):
        out, lse, rng_state, unused, _ = torch.ops.aten._flash_attention_forward(
            q, k, v, cu, cu, max_len, max_len, dropout_p, False, False
        )
        ctx.save_for_backward(q, k, v, out, lse, cu, rng_state, unused)
        ctx.max_len, ctx.dropout_p = max_len, dropout_p
        return out

    @staticmethod
    def backward(ctx, grad):
        q, k, v, out, lse, cu, rng_state, unused = ctx.saved_tensors
        dq, dk, dv = torch.ops.aten._flash_attention_backward(
            grad, q, k, v, out, lse, cu, cu, ctx.max_len, ctx.max_len, ctx.dropout_p, False, rng_state, unused
        )
        return dq, dk, dv, None, None, None


def _varlen_autograd(q, k, v, cu, max_len, dropout_p):
    return torch.ops.aten._flash_attention_forward(
        q, k, v, cu, cu, max_len, max_len, dropout_p, False, False
    )[0]


_VARLEN = []


def fa2_varlen(q, k, v, cu, max_len, dropout_p):
    """(nnz, H, d) unpadded q, k, v → (nnz, H, d); PyTorch's FlashAttention-2 varlen kernels. The
    first call picks the op's own autograd if it has one, else the explicit backward op."""
    if not _VARLEN:
        small = [
            torch.randn(256, 2, D, device="cuda", dtype=torch.half, requires_grad=True) for _ in range(3)
        ]
        cu_small = torch.tensor([0, 100, 256], dtype=torch.int32, device="cuda")
        for how in (_varlen_autograd, _VarlenExplicit.apply):
            try:
                how(*small, cu_small, 156, 0.0).sum().backward()
                if all(t.grad is not None for t in small):
                    _VARLEN.append(how)
                    print(f"fa2_varlen: backward via {getattr(how, '__name__', 'explicit op')}", flush=True)
                    break
            except (RuntimeError, TypeError):
                continue
        if not _VARLEN:
            raise RuntimeError("fa2_varlen: neither the op's autograd nor its backward op ran")
    return _VARLEN[0](q, k, v, cu, max_len, dropout_p)


def fa2_sdpa(q, k, v, dropout_p):
    """(B, N, H, d) q, k, v → (B, N, H, d) through SDPA's flash backend (no mask)."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
        out = F.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), dropout_p=dropout_p
        )
    return out.transpose(1, 2)


class Case:
    """Inputs of one variant, its leaves (for gradients) and a step function."""

    def __init__(self, impl, dropout_p, batch, seed):
        gen = torch.Generator(device="cuda").manual_seed(seed)
        self.lengths, self.mask, self.cu = lengths_and_mask(batch, N, gen)
        self.nnz = int(self.lengths.sum())
        self.impl, self.dropout_p = impl, dropout_p
        rnd = lambda *shape: (0.5 * torch.randn(*shape, device="cuda", generator=gen)).half()  # noqa: E731
        if impl == "standard":
            self.qkv = rnd(batch, N, 3, H, D).requires_grad_()
            self.leaves = [self.qkv]
            self.fn = lambda: attention_ref(self.qkv, self.mask, dropout_p)
            out_shape = (batch, N, H, D)
        elif impl == "fa2_varlen":
            self.leaves = [rnd(self.nnz, H, D).requires_grad_() for _ in range(3)]
            max_len = int(self.lengths.max())
            self.fn = lambda: fa2_varlen(*self.leaves, self.cu, max_len, dropout_p)
            out_shape = (self.nnz, H, D)
        else:
            self.leaves = [rnd(batch, N, H, D).requires_grad_() for _ in range(3)]
            self.fn = lambda: fa2_sdpa(*self.leaves, dropout_p)
            out_shape = (batch, N, H, D)
        self.grad_out = rnd(*out_shape)

    def step(self):
        for leaf in self.leaves:
            leaf.grad = None
        out = self.fn()
        out.backward(self.grad_out)
        return out

    def qkv_grads(self):
        """(out-independent) q, k, v gradients as (B, N, H, d) or (nnz, H, d) tensors."""
        if self.impl == "standard":
            return self.qkv.grad.unbind(dim=2)
        return [leaf.grad for leaf in self.leaves]


def reference64(case):
    """Float64 output and q, k, v gradients for a dropout-free case, on the real tokens only."""
    if case.impl == "standard":
        qkv = case.qkv.detach().double().requires_grad_()
        out = attention_ref(qkv, case.mask, 0.0)
        out.backward(case.grad_out.double())
        grads = qkv.grad.unbind(dim=2)
        keep = case.mask
        return [t[keep] for t in (out, *grads)]
    if case.impl == "fa2_sdpa":
        q, k, v = (leaf.detach().double().requires_grad_() for leaf in case.leaves)
        qkv = torch.stack([q, k, v], dim=2)
        out = attention_ref(qkv, torch.ones_like(case.mask), 0.0)
        out.backward(case.grad_out.double())
        return [t.flatten(0, 1) for t in (out, q.grad, k.grad, v.grad)]
    outs, grads = [], [[], [], []]
    starts = case.cu.tolist()
    for i in range(len(starts) - 1):
        a, b = starts[i], starts[i + 1]
        q, k, v = (leaf.detach()[a:b].double()[None].requires_grad_() for leaf in case.leaves)
        qkv = torch.stack([q, k, v], dim=2)
        out = attention_ref(qkv, torch.ones(1, b - a, dtype=torch.bool, device="cuda"), 0.0)
        out.backward(case.grad_out[a:b].double()[None])
        outs.append(out[0])
        for g, t in zip(grads, (q, k, v)):
            g.append(t.grad[0])
    return [torch.cat(outs)] + [torch.cat(g) for g in grads]


def check(impl, seed=1234, batch=8):
    """Relative errors ‖x − ref‖/‖ref‖ of out, dq, dk, dv with dropout off, fresh inputs."""
    case = Case(impl, 0.0, batch, seed)
    out = case.step()
    got = [out] + list(case.qkv_grads())
    if impl == "standard":
        got = [t[case.mask] for t in got]
    elif impl == "fa2_sdpa":
        got = [t.flatten(0, 1) for t in got]
    ref = reference64(case)
    row = {
        "variant": impl,
        "batch": batch,
        "seq_len": N,
        "heads": H,
        "head_dim": D,
        "dropout_p": 0.0,
        "tokens": case.nnz,
    }
    worst = 0.0
    for name, g, r in zip(("out", "dq", "dk", "dv"), got, ref):
        finite = bool(torch.isfinite(g).all())
        err = float((g.double() - r).norm() / r.norm()) if finite else float("nan")
        row[f"rel_err_{name}"] = err
        worst = max(worst, err) if finite else float("inf")
    row["passed"] = worst < 1e-2
    return row


def time_step(case, warmup=3, reps=30):
    for _ in range(warmup):
        case.step()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        case.step()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times), min(times), max(times), reps


def ncu_driver():
    """Run under ncu --profile-from-start off: one profiled step per variant, a marker kernel first."""
    for impl, p in VARIANTS:
        try:
            case = Case(impl, p, B, seed=0)
            case.step()  # warm-up outside the profiled range (cuBLAS handles, allocator)
            torch.cuda.synchronize()
        except Exception as e:  # noqa: BLE001 - recorded, the other variants still run
            print(f"ncu-driver: FAILED {impl} p={p} before profiling: {e!r}", flush=True)
            continue
        torch.cuda.profiler.start()
        torch.cuda._sleep(1000)
        try:
            case.step()
            torch.cuda.synchronize()
            print(f"ncu-driver: ok {impl} p={p} tokens={case.nnz}", flush=True)
        except Exception as e:  # noqa: BLE001
            print(f"ncu-driver: FAILED {impl} p={p} while profiled: {e!r}", flush=True)
        torch.cuda.profiler.stop()
        del case
        torch.cuda.empty_cache()


def parse_raw_csv(text, metrics=METRICS):
    """ncu --csv --page raw --print-units base: header row, units row, one row per kernel; each
    kernel's `metrics` as floats (None where ncu has no value)."""
    import csv
    import io

    lines = [ln for ln in text.splitlines() if ln.startswith('"')]
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if not rows:
        return [], []
    header, data = rows[0], [r for r in rows[1:] if r and r[0].isdigit()]
    kernels = []
    for r in data:
        rec = dict(zip(header, r))
        entry = {"id": int(rec["ID"]), "kernel": rec.get("Kernel Name", "")}
        for m in metrics:
            value = (rec.get(m) or "").replace(",", "")
            entry[m] = float(value) if value not in ("", "n/a") else None
        kernels.append(entry)
    return sorted(kernels, key=lambda e: e["id"])


def split_by_marker(kernels):
    """[[kernel, ...] per variant]: the marker kernel starts each variant's step and is dropped."""
    steps = []
    for k in kernels:
        if MARKER in k["kernel"]:
            steps.append([])
        elif steps:
            steps[-1].append(k)
    return steps


def run_ncu(ncu, log):
    cmd = [
        ncu,
        "--profile-from-start",
        "off",
        "--cache-control",
        "all",
        "--clock-control",
        "none",
        "--metrics",
        ",".join(METRICS),
        "--csv",
        "--page",
        "raw",
        "--print-units",
        "base",
        sys.executable,
        os.path.abspath(__file__),
        "--ncu-driver",
    ]
    t0 = time.time()
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    except subprocess.TimeoutExpired as e:
        log.append(f"ncu: timed out after {time.time() - t0:.0f} s; counters not recorded")
        log.append(str(e.stderr or "")[-2000:])
        return []
    log.append(f"ncu rc={proc.returncode} in {time.time() - t0:.0f} s: {' '.join(cmd)}")
    log.append(proc.stderr[-4000:])
    log.extend(ln for ln in proc.stdout.splitlines() if ln.startswith(("==", "ncu-driver")))
    return parse_raw_csv(proc.stdout), [ln for ln in proc.stdout.splitlines() if ln.startswith("ncu-driver:")]


def ncu_reads_counters(ncu, log):
    """ncu --version and a tiny profiled launch; False (wall time only) if counters cannot be read."""
    version = subprocess.run([ncu, "--version"], capture_output=True, text=True, timeout=60)
    log.append("ncu --version: " + version.stdout.strip().replace("\n", " | "))
    NCU_VERSION.append(log[-1])
    probe = subprocess.run(
        [
            ncu,
            "--metrics",
            "dram__bytes_read.sum",
            "--csv",
            "--page",
            "raw",
            sys.executable,
            "-c",
            "import torch; torch.ones(1 << 20, device='cuda').sum().item()",
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    ok = probe.returncode == 0 and "dram__bytes_read.sum" in probe.stdout and "ERR_" not in probe.stdout
    log.append(f"ncu probe rc={probe.returncode} ok={ok}: {probe.stdout[-600:]} {probe.stderr[-600:]}")
    return ok


def provenance_writer(log):
    """(record(extra) -> dict, write(path, rows, fields, record)): measurements.provenance's
    writer (sidecar with run_id and sha256). If the tree's copy cannot import it (a half-finished
    edit elsewhere), a plain CSV + sidecar with the same keys, so that the run is not lost."""
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    try:
        from measurements.provenance import csv_text, provenance, write_measurement

        def write(path, rows, fields, record):
            write_measurement(path, csv_text(rows, fields), record)

        return provenance, write
    except Exception as e:  # noqa: BLE001 - any import failure: fall back, and say so
        log.append(f"provenance: measurements.provenance not importable ({e!r}); plain sidecars")
    import csv
    import datetime
    import hashlib
    import io
    import json
    import platform

    def record(extra):
        smi = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"],
            capture_output=True,
            text=True,
        ).stdout.strip()
        stamp = datetime.datetime.now(datetime.UTC)
        commit = os.environ.get("FLASHIO_COMMIT", "unknown")
        return {
            "run_id": os.environ.get("FLASHIO_RUN_ID", stamp.strftime("%Y%m%dT%H%M%SZ-") + commit[:10]),
            "date_utc": stamp.isoformat(timespec="seconds"),
            "git_commit": commit + " (FLASHIO_COMMIT)",
            "python": platform.python_version(),
            "platform": platform.platform(),
            "nvidia_smi": smi,
            "argv": sys.argv,
            **extra,
        }

    def write(path, rows, fields, rec):
        buf = io.StringIO(newline="")
        w = csv.DictWriter(buf, fieldnames=fields, lineterminator="\n")
        w.writeheader()
        w.writerows({k: r.get(k, "") for k in fields} for r in rows)
        data = buf.getvalue().encode()
        with open(path, "wb") as f:
            f.write(data)
        side = {
            **rec,
            "file": os.path.basename(path),
            "sha256": hashlib.sha256(data).hexdigest(),
            "bytes": len(data),
        }
        with open(path + ".provenance.json", "w") as f:
            json.dump(side, f, indent=1, default=str)

    return record, write


def find_ncu():
    for name in ("gpu_kernels.measure.ncu", "gpu_kernels.profile"):
        try:
            return __import__(name, fromlist=["find_ncu"]).find_ncu()
        except Exception:  # noqa: BLE001 - a module in flux: try the next, then PATH
            continue
    return shutil.which("ncu")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="folder for the CSV files and their provenance")
    ap.add_argument("--ncu-driver", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=30, help="timed steps per variant (median reported)")
    args = ap.parse_args(argv)
    if args.ncu_driver:
        return ncu_driver()
    if not args.out:
        ap.error("--out: give the folder for the results")
    if args.reps < 5:
        ap.error("--reps: at least 5 timed steps")
    if not torch.cuda.is_available():
        sys.exit("figure2_torch: no CUDA GPU visible to torch")
    os.makedirs(args.out, exist_ok=True)
    log = [f"torch {torch.__version__}, CUDA {torch.version.cuda}, {torch.cuda.get_device_name()}"]
    provenance, write = provenance_writer(log)
    ncu = find_ncu()
    counters = bool(ncu) and ncu_reads_counters(ncu, log)
    print("\n".join(log), flush=True)

    checks = []
    for impl in ("standard", "fa2_varlen", "fa2_sdpa"):
        try:
            checks.append(check(impl))
        except Exception as e:  # noqa: BLE001 - recorded; the measurements still run
            checks.append({"variant": impl, "passed": False, "error": repr(e)[:300]})
    for row in checks:
        print("check", row, flush=True)

    rows = []
    for impl, p in VARIANTS:
        try:
            case = Case(impl, p, B, seed=0)
            med, lo, hi, reps = time_step(case, reps=args.reps)
        except Exception as e:  # noqa: BLE001
            rows.append({"variant": impl, "dropout_p": p, "note": f"timing failed: {e!r}"[:300]})
            print(rows[-1], flush=True)
            continue
        rows.append(
            {
                "variant": impl,
                "dropout_p": p,
                "batch": B,
                "seq_len": N,
                "heads": H,
                "head_dim": D,
                "dtype": "fp16",
                "tokens": case.nnz if impl == "fa2_varlen" else B * N,
                "real_tokens": case.nnz,
                "wall_ms_median": med,
                "wall_ms_min": lo,
                "wall_ms_max": hi,
                "timed_steps": reps,
            }
        )
        print(f"time {impl} p={p}: median {med:.3f} ms (min {lo:.3f}, max {hi:.3f})", flush=True)
        del case
        torch.cuda.empty_cache()

    summary = [
        "variant",
        "dropout_p",
        "batch",
        "seq_len",
        "heads",
        "head_dim",
        "dtype",
        "tokens",
        "real_tokens",
        "wall_ms_median",
        "wall_ms_min",
        "wall_ms_max",
        "timed_steps",
        "kernels",
        "dram_read_bytes",
        "dram_write_bytes",
        "l2_read_bytes",
        "l2_write_bytes",
        "ncu_duration_ns",
        "ncu_status",
        "note",
    ]
    check_fields = list(dict.fromkeys(k for row in checks for k in row))
    what = (
        "Figure 2 (left) configuration on this GPU: B=64, H=16, N=1024, d=64, fp16, non-causal, key-padding "
        "lengths from [1004, 1024) (torch.randint with a seeded CUDA generator, seed 0), one forward+backward "
        "step per variant; wall time = CUDA events, median; ncu --cache-control all --clock-control none, "
        "sums over every kernel of the step (a torch.cuda._sleep marker kernel separates the steps and is "
        "excluded)"
    )

    def save(kernel_rows):
        record = provenance(
            {
                "what": what,
                "torch": torch.__version__,
                "torch_cuda": torch.version.cuda,
                "ncu": NCU_VERSION[0] if counters else "counters not read: wall time only",
                "log": log,
            }
        )
        write(os.path.join(args.out, "figure2_h200.csv"), rows, summary, record)
        write(os.path.join(args.out, "figure2_h200_check.csv"), checks, check_fields, record)
        if kernel_rows:
            write(
                os.path.join(args.out, "figure2_h200_kernels.csv"), kernel_rows, list(kernel_rows[0]), record
            )

    save([])  # wall time and checks are kept even if the profiler run fails
    kernel_rows = []
    if counters:
        kernels_all, statuses = run_ncu(ncu, log)
        steps = split_by_marker(kernels_all)
        profiled = [
            row
            for row, (impl, p) in zip(rows, VARIANTS)
            if any(
                st.startswith(f"ncu-driver: ok {impl} p={p} ")
                or st.startswith(f"ncu-driver: FAILED {impl} p={p} while")
                for st in statuses
            )
        ]
        if len(steps) != len(profiled):
            log.append(f"ncu: {len(steps)} marked steps for {len(profiled)} profiled variants; not recorded")
            steps = []
        for row in rows:
            row["ncu_status"] = next(
                (
                    st.split(": ", 1)[1][:200]
                    for st in statuses
                    if f" {row['variant']} p={row['dropout_p']} " in st
                ),
                "not profiled",
            )
        for row, kernels in zip(profiled, steps):
            for m, key in (
                (METRICS[0], "dram_read_bytes"),
                (METRICS[1], "dram_write_bytes"),
                (METRICS[4], "ncu_duration_ns"),
            ):
                row[key] = sum(k[m] or 0 for k in kernels)
            row["l2_read_bytes"] = 32 * sum(k[METRICS[2]] or 0 for k in kernels)
            row["l2_write_bytes"] = 32 * sum(k[METRICS[3]] or 0 for k in kernels)
            row["kernels"] = len(kernels)
            for i, k in enumerate(kernels):
                kernel_rows.append(
                    {
                        "variant": row["variant"],
                        "dropout_p": row["dropout_p"],
                        "index": i,
                        "kernel": k["kernel"][:400],
                        "dram_read_bytes": k[METRICS[0]],
                        "dram_write_bytes": k[METRICS[1]],
                        "l2_read_sectors": k[METRICS[2]],
                        "l2_write_sectors": k[METRICS[3]],
                        "ncu_duration_ns": k[METRICS[4]],
                    }
                )
    print("\n".join(log[1:]), flush=True)
    save(kernel_rows)
    for row in rows:
        print({k: row.get(k) for k in summary if k in row})
    return 0


if __name__ == "__main__":
    sys.exit(main())
