"""Which kernel PyTorch's CUDA softmax launches, by row length: the names and launch shapes the profiler
records for ``torch.softmax(x, -1)`` (fp32 rows) and ``torch.softmax(x, -1, dtype=torch.float32)`` on
fp16 rows (the half-to-float path), at row lengths around the dispatch thresholds of
aten/src/ATen/native/cuda/SoftMax.cu's host_softmax (1024, 2048; multiples of 8 or not).

    python3 benchmarks/softmax_kernels_h200.py --out $OUT

Writes softmax_kernels_h200.csv (+ provenance): torch version, input dtype, N, kernel name, grid and
block when the profiler reports them. The cost model's `simlib.cost.softmax_trips` names its rule.
"""

from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

LENGTHS = (1000, 1024, 1100, 1400, 2000, 2048, 2900, 3300, 4096, 9000, 12000, 16384)
FIELDS = ["torch", "dtype", "seq_len", "kernel", "grid", "block"]


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", required=True)
    args = p.parse_args(argv)
    import torch
    from torch.profiler import ProfilerActivity, profile

    from measurements.provenance import csv_text, provenance, write_measurement

    os.makedirs(args.out, exist_ok=True)
    rows = []
    for dtype in (torch.float32, torch.float16):
        for n in LENGTHS:
            x = torch.randn(64, n, device="cuda", dtype=dtype)
            torch.softmax(x, -1, dtype=torch.float32)
            torch.cuda.synchronize()
            with profile(activities=[ProfilerActivity.CUDA]) as prof:
                torch.softmax(x, -1, dtype=torch.float32)
                torch.cuda.synchronize()
            for ev in prof.events():
                if ev.device_type.name != "CUDA":
                    continue
                name = ev.name
                extra = getattr(ev, "kwinputs", {}) or {}
                rows.append(
                    {
                        "torch": torch.__version__,
                        "dtype": str(dtype).split(".")[-1],
                        "seq_len": n,
                        "kernel": name[:160],
                        "grid": str(extra.get("grid", "")),
                        "block": str(extra.get("block", "")),
                    }
                )
    record = provenance(
        {"what": "the CUDA kernels torch.softmax(x, -1, dtype=float32) launches, by row length"}
    )
    write_measurement(os.path.join(args.out, "softmax_kernels_h200.csv"), csv_text(rows, FIELDS), record)
    for r in rows:
        print(f"{r['dtype']:8s} {r['seq_len']:6d} {r['kernel'][:90]}")


if __name__ == "__main__":
    main()
