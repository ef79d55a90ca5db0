"""The compute-bound punchline: arithmetic intensity (FLOP per HBM byte) against each GPU's ridges.

A kernel is memory bound left of the ridge I* = peak FLOP/s / HBM bandwidth and compute bound right
of it. Each GPU has two ridges that matter here: fp16 on the tensor cores (what FlashAttention runs
on) and fp32 on the CUDA cores (what our numba teaching kernels run on). The intensities are
computed with `count()`: naive (standard attention), FlashAttention-1 (Algorithm 1's tiles) and
FlashAttention-2 (its own default tiles), and FlashAttention-2 with every K/V re-read absorbed by
the L2: the compulsory traffic (read Q, K, V once, write O once), an upper limit of its intensity,
labelled as such (the model has no L2 level).

Worked number (fp16, N = 4096, d = 64, one head): naive does 4N²d = 4,294,967,296 matmul FLOPs
over 3Nd + 4N² + Nd elements = 136,314,880 B: 31.5 FLOP/B. The compulsory traffic is 4Nd
elements = 2,097,152 B, so the L2-absorbed limit is 4,294,967,296 / 2,097,152 = 2048 FLOP/B.

>>> t = intensity_table(gpus=("h200",), seq_len=4096, head_dim=64).set_index("schedule")
>>> float(round(t.loc["naive", "FLOP per HBM byte"], 1)), float(t.loc[L2_LIMIT, "FLOP per HBM byte"])
(31.5, 2048.0)
>>> float(round(t.loc["naive", "ridge fp16 (FLOP/B)"], 1)), float(round(t.loc["naive", "ridge fp32 (FLOP/B)"], 1))
(206.1, 13.9)
"""

import numpy as np
import pandas as pd

from simlib import Workload, compulsory_bytes, load_preset

from .claims import result_on

SCHEDULES = ("naive", "fa1", "fa2")
L2_LIMIT = "fa2, L2 absorbs re-reads"
DATACENTER_GPUS = ("a100-40gb", "a100-80gb", "h100-sxm", "h200")


def ridge(hardware, dtype):
    """peak FLOP/s of `dtype` / HBM bandwidth: the intensity where a kernel turns compute bound."""
    return hardware.peak_flops[dtype] / hardware.level("HBM").bandwidth_bytes_per_s


def tiles_of(result):
    """'Br×Bc' of a tiled result's mapping, '—' for schedules without such tiles."""
    m = result.mapping
    rows, cols = getattr(m, "block_rows", None), getattr(m, "block_cols", None)
    return f"{rows}×{cols}" if rows and cols else "—"


#: The verdict column of the unit that does not run this dtype: fp16/bf16 data runs on the tensor
#: cores, fp32 data on the CUDA cores, and an fp32 kernel moves twice the bytes of an fp16 one, so an
#: fp16 intensity says nothing about the fp32 ridge (call the table again with dtype="fp32").
NOT_THIS_DTYPE = "—"


def side(intensity, hardware, dtype):
    """Which side of `dtype`'s ridge an intensity lies on."""
    return "compute bound" if intensity > ridge(hardware, dtype) else "memory bound"


def intensity_table(gpus=DATACENTER_GPUS, seq_len=4096, head_dim=64, dtype="fp16"):
    """One row per (GPU, schedule): FLOPs, HBM bytes, intensity, both ridges, and which side of the
    ridge of the unit that runs `dtype` (tensor cores for fp16/bf16, CUDA cores for fp32)."""
    sixteen_bit = dtype != "fp32"
    rows = []
    workload = Workload(seq_len, head_dim, dtype=dtype)
    for key in gpus:
        hw = load_preset(key)
        results = {name: result_on(name, workload, key) for name in SCHEDULES}
        entries = [(name, r.flops, r.hbm_bytes, tiles_of(r)) for name, r in results.items()]
        entries.append((L2_LIMIT, results["fa2"].flops, compulsory_bytes(workload), tiles_of(results["fa2"])))
        for name, flops, hbm, tiles in entries:
            ai = flops / hbm
            rows.append(
                {
                    "gpu": hw.name,
                    "schedule": name,
                    "tiles": tiles,
                    "FLOPs": flops,
                    "HBM bytes": hbm,
                    "FLOP per HBM byte": ai,
                    "ridge fp16 (FLOP/B)": ridge(hw, "fp16"),
                    "ridge fp32 (FLOP/B)": ridge(hw, "fp32"),
                    "fp16 tensor cores": side(ai, hw, "fp16") if sixteen_bit else NOT_THIS_DTYPE,
                    "fp32 CUDA cores": NOT_THIS_DTYPE if sixteen_bit else side(ai, hw, "fp32"),
                }
            )
    return pd.DataFrame(rows)


SWEEP_SEQ_LENS = tuple(2**k for k in range(8, 17))  # N = 256 … 64K


def intensity_sweep(gpu="h200", seq_lens=SWEEP_SEQ_LENS, head_dim=64, dtype="fp16"):
    """FLOP per HBM byte of each schedule (and the L2-absorbed limit) vs N on one GPU."""
    parts = [intensity_table((gpu,), n, head_dim, dtype).assign(N=n) for n in seq_lens]
    return pd.concat(parts, ignore_index=True)


def plot_intensity(ax, sweep, hardware, colors, labels):
    """Intensity vs N per schedule on log–log axes, with the fp16 tensor-core and fp32 CUDA-core ridges."""
    for name, g in sweep.groupby("schedule", sort=False):
        limit = name == L2_LIMIT
        ax.loglog(
            g.N,
            g["FLOP per HBM byte"],
            "o--" if limit else "o-",
            color=colors["fa2" if limit else name],
            mfc="none" if limit else None,
            label=(
                "FlashAttention-2 if L2 absorbed every re-read (compulsory traffic: a limit)"
                if limit
                else labels[name]
            ),
        )
    lo, hi = sweep.N.min(), sweep.N.max()
    for dtype, where, style in (("fp16", "tensor cores", "-"), ("fp32", "CUDA cores", ":")):
        r = ridge(hardware, dtype)
        ax.axhline(r, color="black", ls=style, lw=1.2)
        ax.text(lo, r * 1.12, f"ridge {dtype} {where}: {r:.0f} FLOP/B", fontsize=9)
    ax.set_xlim(lo / 1.3, hi * 1.3)
    ax.set_ylim(
        min(sweep["FLOP per HBM byte"].min(), ridge(hardware, "fp32")) / 2,
        sweep["FLOP per HBM byte"].max() * 2,
    )
    ax.set_ylabel("arithmetic intensity (FLOP per HBM byte, log)")
    ax.set_title(f"{hardware.name}: above a ridge the kernel is compute bound")
    return np.array([ridge(hardware, "fp16"), ridge(hardware, "fp32")])
