"""Look at what numba made of the kernels: the PTX of the timing and the counting builds.

Checks, per kernel and build:

* ``atom``: atomic instructions. The counting build has exactly the counter atomics; the timing
  build must have none (the ``if COUNTING:`` branches are pruned at compile time).
* ``f64``: float64 instructions. Every constant is float32 and math.exp/log take float32, so
  there should be none (a stray Python float literal would promote arithmetic to float64).
* ``ld.local`` / ``st.local``: local-memory traffic (a per-thread array the compiler could not
  keep in registers).

On a GPU the PTX comes from the very dispatchers that ran (``inspect_asm`` after a launch). Without
one, ``cuda.compile_ptx`` needs only NVVM and NVRTC, which a CUDA toolkit or the nvidia-cuda-nvrtc
wheel provides.
"""

from __future__ import annotations

import re


def _count(pattern: str, text: str) -> int:
    return len(re.findall(pattern, text, flags=re.MULTILINE))


def summarize_ptx(ptx: str) -> dict:
    instr = [ln.strip() for ln in ptx.splitlines() if ln.strip() and not ln.strip().startswith("//")]
    body = "\n".join(instr)
    return {
        "atom": _count(r"^\s*(?:@!?%p\d+\s+)?(?:atom|red)\.", body),
        "f64": _count(r"^\s*(?:@!?%p\d+\s+)?[a-z]+(?:\.[a-z0-9]+)*\.f64\b", body),
        "ld_local": _count(r"\bld\.local\.", body),
        "st_local": _count(r"\bst\.local\.", body),
        "ld_shared": _count(r"\bld\.shared\.", body),
        "mma": _count(r"\bmma\.sync\.", body),
        "ldmatrix": _count(r"\bldmatrix\.sync\.", body),
        "cp_async": _count(r"\bcp\.async\.c[ag]\.", body),
        "st_shared": _count(r"\bst\.shared\.", body),
        "lines": len(instr),
    }


def _cases(head_dim: int = 64, seq_len: int = 4096):
    """(name, dispatcher factory(counting), launch args on tiny inputs) for each kernel."""
    from simlib.kernel_layout import NAIVE_DEFAULTS_GPU, tiled_default_blocks

    from .checks import softmax_per_thread
    from .kernels.naive import matmul_kernel, softmax_kernel
    from .kernels.tiled import fa2_kernel

    br, bc = tiled_default_blocks(seq_len, head_dim)
    t_mm, t_sm = NAIVE_DEFAULTS_GPU["matmul_tile"], NAIVE_DEFAULTS_GPU["softmax_threads"]
    per = softmax_per_thread(seq_len, t_sm)
    return [
        (f"tiled fa2 d={head_dim} Br={br} Bc={bc}", lambda c: fa2_kernel(head_dim, br, bc, c), "fa2"),
        (f"naive matmul QK^T T={t_mm}", lambda c: matmul_kernel(t_mm, True, c), "mm"),
        (f"naive softmax t={t_sm} per_thread={per}", lambda c: softmax_kernel(t_sm, per, c), "sm"),
        (f"naive matmul PV T={t_mm}", lambda c: matmul_kernel(t_mm, False, c), "mm"),
    ]


def _signature(kind: str):
    from numba import types

    a3 = types.Array(types.float32, 3, "C")
    a2 = types.Array(types.float32, 2, "C")
    cnt = types.Array(types.int64, 1, "C")
    if kind == "fa2":
        return (a3, a3, a3, a3, a2, cnt)
    if kind == "mm":
        return (a3, a3, a3, types.float32, cnt)
    return (a3, a3, cnt)


def ptx_report(head_dim: int = 64, seq_len: int = 4096, cc=None) -> list[dict]:
    """Compile each kernel with counting off and on; summarise the PTX of both builds."""
    from numba import cuda

    rows = []
    on_gpu = cuda.is_available()
    if cc is None:
        cc = cuda.get_current_device().compute_capability if on_gpu else (9, 0)
    for name, factory, kind in _cases(head_dim, seq_len):
        for counting in (False, True):
            disp = factory(counting)
            sig = _signature(kind)
            if on_gpu:
                # the overload a launch with these argument types uses (compiled now if not yet)
                kernel = disp.compile(sig)
                ptx = kernel.inspect_asm(cc)
                regs = getattr(kernel, "regs_per_thread", None)
                local = getattr(kernel, "local_mem_per_thread", None)
            else:
                ptx, _ = cuda.compile_ptx(disp.py_func, sig, cc=cc)
                regs = local = None
            row = {"kernel": name, "build": "counting" if counting else "timing", "cc": f"{cc[0]}.{cc[1]}"}
            row.update(summarize_ptx(ptx))
            row["regs_per_thread"] = regs
            row["local_bytes_per_thread"] = local
            rows.append(row)
    if on_gpu and head_dim in (64, 128):
        rows += tc_ptx_rows(head_dim, cc)
    return rows


def tc_ptx_rows(head_dim: int, cc) -> list[dict]:
    """fa2_tc (bf16, default tiles, non-causal and causal), timing and counting builds: the PTX of the
    dispatcher (compiled on a GPU), marked ``tensor_core`` so check_report also asks for mma,
    ldmatrix and cp.async."""
    from .kernels.fa2_tc import default_config, ptx_of

    cfg = default_config(head_dim)
    rows = []
    for causal in (False, True):
        for counting in (False, True):
            ptx = ptx_of(cfg, "bf16", counting, causal)
            name = f"fa2_tc bf16 d={head_dim} W={cfg.warps} Bc={cfg.block_cols}{' causal' if causal else ''}"
            rows.append(
                {
                    "kernel": name,
                    "build": "counting" if counting else "timing",
                    "cc": f"{cc[0]}.{cc[1]}",
                    **summarize_ptx(ptx),
                    "regs_per_thread": None,
                    "local_bytes_per_thread": None,
                    "tensor_core": True,
                }
            )
    return rows


def check_report(rows: list[dict]) -> list[str]:
    """Problems found: atomics in a timing build, none in a counting build, any float64."""
    problems = []
    for r in rows:
        if r["build"] == "timing" and r["atom"] != 0:
            problems.append(f"{r['kernel']}: timing build has {r['atom']} atomic instructions")
        if r["build"] == "counting" and r["atom"] == 0:
            problems.append(f"{r['kernel']}: counting build has no atomic instructions")
        if r["f64"] != 0:
            problems.append(f"{r['kernel']} ({r['build']}): {r['f64']} float64 instructions")
        if r.get("tensor_core"):
            missing = [k for k in ("mma", "ldmatrix", "cp_async") if not r[k]]
            if missing or r["ld_local"] or r["st_local"]:
                problems.append(
                    f"{r['kernel']} ({r['build']}): no {', '.join(missing)}; local ld/st "
                    f"{r['ld_local']}/{r['st_local']}"
                )
    return problems


def format_report(rows: list[dict]) -> str:
    cols = [
        "kernel",
        "build",
        "atom",
        "f64",
        "ld_local",
        "st_local",
        "ld_shared",
        "st_shared",
        "mma",
        "ldmatrix",
        "cp_async",
        "regs_per_thread",
        "local_bytes_per_thread",
    ]
    widths = {c: max(len(c), *(len(str(r[c])) for r in rows)) for c in cols}
    lines = ["  ".join(c.ljust(widths[c]) for c in cols)]
    for r in rows:
        lines.append("  ".join(str(r[c]).ljust(widths[c]) for c in cols))
    return "\n".join(lines)
