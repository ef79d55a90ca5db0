"""Device memory that a CUDA context takes before any tensor of yours: measured, per framework.

``python -m gpu_kernels.measure.cuda_context --out DIR [--repeats 5]`` starts, for each framework
(torch, cupy) and each repeat, a fresh Python process that reads NVML's used device memory, creates
the framework's CUDA context, and reads it again after each stage:

* ``context``: the context and a 1-element tensor (what `torch.zeros(1, device="cuda")` costs);
* ``cublas``: after a first fp16 1024×1024 matrix product (cuBLAS's handle and kernels loaded);
* ``sdpa`` (torch only): after a first fp16 `scaled_dot_product_attention` call (its kernels loaded).

At each stage the child records NVML's device-wide used bytes, its own process's used bytes (NVML's
process list), and what its framework's allocator holds (torch `memory_reserved`, cupy's pool
`total_bytes`). The context's own memory is then ``device used − device used before − allocator``:
what the process took that no tensor of it accounts for. The parent never creates a context (it only
talks to NVML), so nothing else on the card moves between the two readings of a child.

Worked number: NVML reads 600 MiB used before the child, 1,112 MiB after its context, and the
allocator holds 2 MiB, so the context is 1112 − 600 − 2 = 510 MiB:

>>> context_bytes({"device_used_bytes": 1112 << 20, "allocator_bytes": 2 << 20}, 600 << 20) >> 20
510

Writes cuda_context_h200.json (+ provenance sidecar): every reading of every repeat, the driver
version, CUDA_MODULE_LOADING, and per framework and stage the median, min and max context bytes.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys

FRAMEWORKS = ("torch", "cupy")
STAGES = {"torch": ("context", "cublas", "sdpa"), "cupy": ("context", "cublas")}

#: The child: one framework, one fresh process; prints one JSON line of readings.
CHILD = r"""
import json, os, sys
import pynvml
pynvml.nvmlInit()
h = pynvml.nvmlDeviceGetHandleByIndex(0)
framework = sys.argv[1]

def used_by_me():
    try:
        procs = pynvml.nvmlDeviceGetComputeRunningProcesses(h)
    except pynvml.NVMLError:
        return None
    mine = [p.usedGpuMemory for p in procs if p.pid == os.getpid()]
    if not mine and len(procs) == 1:  # a container: NVML lists the host's pid
        mine = [procs[0].usedGpuMemory]
    return int(mine[0]) if mine and mine[0] is not None else None

def reading(stage, allocator):
    return {"stage": stage, "device_used_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).used),
            "process_used_bytes": used_by_me(), "allocator_bytes": int(allocator)}

out = {"framework": framework, "before_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).used), "stages": []}
if framework == "torch":
    import torch
    import torch.nn.functional as F
    x = torch.zeros(1, device="cuda"); torch.cuda.synchronize()
    out["stages"].append(reading("context", torch.cuda.memory_reserved()))
    a = torch.randn(1024, 1024, device="cuda", dtype=torch.float16); (a @ a).sum().item()
    out["stages"].append(reading("cublas", torch.cuda.memory_reserved()))
    q = torch.randn(1, 32, 256, 128, device="cuda", dtype=torch.float16)
    F.scaled_dot_product_attention(q, q, q, is_causal=True).sum().item()
    out["stages"].append(reading("sdpa", torch.cuda.memory_reserved()))
    free, total = torch.cuda.mem_get_info()
    out["mem_get_info_used_bytes"], out["total_bytes"] = int(total - free), int(total)
else:
    import cupy as cp
    pool = cp.get_default_memory_pool()
    x = cp.zeros(1); cp.cuda.Device().synchronize()
    out["stages"].append(reading("context", pool.total_bytes()))
    a = cp.random.standard_normal((1024, 1024)).astype(cp.float16); float((a @ a).sum())
    out["stages"].append(reading("cublas", pool.total_bytes()))
    free, total = cp.cuda.runtime.memGetInfo()
    out["mem_get_info_used_bytes"], out["total_bytes"] = int(total - free), int(total)
print(json.dumps(out))
"""


def context_bytes(stage: dict, before_bytes: int) -> int:
    """The context's own device memory at one stage: device used − used before − the allocator's."""
    return stage["device_used_bytes"] - before_bytes - stage["allocator_bytes"]


def summary(trials: list[dict]) -> dict:
    """{framework: {stage: {median, min, max, n}}} of context_bytes over the trials."""
    out: dict = {}
    for t in trials:
        for s in t["stages"]:
            out.setdefault(t["framework"], {}).setdefault(s["stage"], []).append(
                context_bytes(s, t["before_bytes"])
            )
    return {
        fw: {
            st: {
                "median_bytes": int(statistics.median(v)),
                "min_bytes": min(v),
                "max_bytes": max(v),
                "n": len(v),
            }
            for st, v in stages.items()
        }
        for fw, stages in out.items()
    }


def driver_versions() -> dict:
    """The driver and its CUDA version as NVML reports them (no CUDA context is created)."""
    import pynvml

    pynvml.nvmlInit()
    h = pynvml.nvmlDeviceGetHandleByIndex(0)
    cuda = pynvml.nvmlSystemGetCudaDriverVersion()
    name = pynvml.nvmlDeviceGetName(h)
    return {
        "gpu_name": name.decode() if isinstance(name, bytes) else name,
        "driver_version": str(pynvml.nvmlSystemGetDriverVersion()),
        "cuda_driver_version": f"{cuda // 1000}.{cuda % 1000 // 10}",
        "memory_total_bytes": int(pynvml.nvmlDeviceGetMemoryInfo(h).total),
        "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING", "(unset: the runtime's default, lazy)"),
    }


def main(argv=None) -> int:
    from measurements.provenance import check_output_dir, provenance, write_measurement

    p = argparse.ArgumentParser(
        prog="python -m gpu_kernels.measure.cuda_context", description=__doc__.splitlines()[0]
    )
    p.add_argument("--out", required=True)
    p.add_argument("--repeats", type=int, default=5)
    a = p.parse_args(argv)
    if a.repeats < 1:
        p.error(f"--repeats must be ≥ 1, got {a.repeats}")
    try:
        check_output_dir(a.out)
        versions = driver_versions()
    except ValueError as e:
        sys.stderr.write(f"error: {e}\n")
        return 2
    except Exception as e:  # no pynvml, no driver, no GPU: one line
        sys.stderr.write(f"error: cuda_context needs a GPU and NVML ({type(e).__name__}: {e})\n")
        return 2
    trials = []
    for r in range(a.repeats):
        for fw in FRAMEWORKS:
            done = subprocess.run(
                [sys.executable, "-c", CHILD, fw], capture_output=True, text=True, timeout=120
            )
            if done.returncode:
                sys.stderr.write(f"error: the {fw} child failed: {done.stderr.strip().splitlines()[-1:]}\n")
                return 1
            trials.append({"repeat": r, **json.loads(done.stdout.strip().splitlines()[-1])})
            st = trials[-1]["stages"]
            print(
                f"repeat {r} {fw:5s} "
                + " ".join(
                    f"{s['stage']} {context_bytes(s, trials[-1]['before_bytes']) / 2**20:.1f} MiB" for s in st
                ),
                flush=True,
            )
    result = {**versions, "summary": summary(trials), "trials": trials}
    for fw, stages in result["summary"].items():
        for st, v in stages.items():
            print(
                f"{fw:5s} {st:8s} median {v['median_bytes'] / 2**20:8.1f} MiB  (min {v['min_bytes'] / 2**20:.1f}, "
                f"max {v['max_bytes'] / 2**20:.1f}, n {v['n']})"
            )
    os.makedirs(a.out, exist_ok=True)
    write_measurement(
        os.path.join(a.out, "cuda_context_h200.json"),
        json.dumps(result, indent=1) + "\n",
        provenance({"what": "device memory of a CUDA context per framework and stage (NVML)"}, gpu=False),
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
