"""What the H200's L2 keeps, read from Nsight Compute runs of the probes and of the tiled kernel.

The runs (benchmarks/h200_diagnostics.py, files in data/measurements/):

* the re-read probe: F bytes read `passes` times over (reuse distance F). Each element is re-read by
  the same thread (`own`), by a block 131 blocks away (`rotating`), or by a random block
  (`shuffled`: every line is read from SMs of both L2 partitions, as K/V tiles are). DRAM bytes
  minus the compulsory F, over the (passes − 1)·F re-read bytes, is the share L2 did not serve.
* the tiled kernel at several (N, d, H): DRAM bytes minus the compulsory Q, K, V, over the K/V
  bytes that a later wave reads again (the physical model's `kv_reread_bytes`), is the share of
  those re-reads L2 did not serve. The model predicts 0 (every re-read distance ≤ the L2).

Worked number (run 11): N = 16384, d = 128, H = 2: compulsory 50.3 MB, two cut heads re-read
2 × 16.8 MB, ncu 75.3 MB → (75.3 − 50.3) / 33.6 = 74 % of the re-reads missed.
"""

import numpy as np
import pandas as pd

from measurements.ncu_csv import ncu_table
from simlib.bounds import compulsory_bytes
from simlib.kernel_layout import ITEM_BYTES, tiled_default_blocks
from simlib.physical.kernels import predict
from simlib.physical.metrics import DRAM_READ, L2_FABRIC, L2_READ, REGISTERS
from simlib.workload import Workload

MIB = 2**20

#: What benchmarks/h200_diagnostics.py profiles (its ncu drivers launch these, in this order), so a
#: reader of the recorded runs knows which launch is which: the probe's footprints and passes, the
#: tiled kernel's (N, d) at H = 4 and its (N, d, H) with few heads.
NCU_SIZES_MIB = (8, 16, 24, 32, 40, 48, 56, 64, 72, 80, 96, 128)
NCU_PASSES = 8
TILED_NCU_SHAPES = tuple((n, d) for d in (64, 128) for n in (8192, 12288, 16384, 20480))
TILED_HEADS_NCU_SHAPES = tuple(
    (n, d, h) for n, d in ((16384, 128), (16384, 64), (12288, 128)) for h in (1, 2, 3)
)


def probe_misses(path, sizes_mib, passes):
    """Footprint, DRAM bytes and the share of re-reads from DRAM, one row per launch of the probe.

    `sizes_mib`: the footprint of each launch in launch order (the first launch included)."""
    table = ncu_table(path)
    if len(table) != len(sizes_mib):
        raise ValueError(f"{path}: {len(table)} launches, {len(sizes_mib)} sizes")
    footprint = np.asarray(sizes_mib, dtype=float) * MIB
    dram = table[DRAM_READ].to_numpy(dtype=float)
    out = pd.DataFrame(
        {
            "footprint (MiB)": list(sizes_mib),
            "DRAM read (MB)": dram / 1e6,
            "re-reads missed": (dram - footprint) / ((passes - 1) * footprint),
        }
    )
    if L2_FABRIC in table and L2_READ in table:
        # L2 sectors fetched from the other partition, per L2 read sector
        out["over the fabric"] = (table[L2_FABRIC] / table[L2_READ]).to_numpy(dtype=float)
    return out


def tiled_rereads(path, shapes, hardware, block_rows=None, block_cols=None):
    """One row per launch of the tiled kernel at `shapes` ((N, d, H), B = 1, launch order).

    Blocks default to the kernel's (simlib.kernel_layout.tiled_default_blocks: the paper's rule for
    48 KiB of static shared memory). Registers come from the profile itself."""
    table = ncu_table(path)
    if len(table) != len(shapes):
        raise ValueError(f"{path}: {len(table)} launches, {len(shapes)} shapes")
    rows = []
    for (n, d, h), (_, launch) in zip(shapes, table.iterrows()):
        w = Workload(seq_len=n, head_dim=d, batch=1, heads=h, dtype="fp32")
        default_br, default_bc = tiled_default_blocks(n, d)
        br, bc = block_rows or default_br, block_cols or default_bc
        p = predict(
            "tiled",
            "fa2",
            w,
            {"block_rows": br, "block_cols": bc},
            hardware,
            registers=int(launch[REGISTERS]),
            details=True,
        )
        compulsory = compulsory_bytes(w) - h * w.matrix_bytes("O")  # Q, K, V read once
        reread = p["model:kv_reread_bytes"]
        extra = launch[DRAM_READ] - compulsory
        rows.append(
            {
                "N": n,
                "d": d,
                "H": h,
                "K/V per head (MiB)": 2 * n * d * ITEM_BYTES / MIB,
                "waves": p["model:waves"],
                "reuse distance (MiB, model)": p["model:kv_reuse_distance_bytes"] / MIB,
                "re-read K/V (MB)": reread / 1e6,
                "DRAM read (MB)": launch[DRAM_READ] / 1e6,
                "model (MB)": p[DRAM_READ] / 1e6,
                "beyond compulsory (MB)": extra / 1e6,
                "re-reads missed": extra / reread if reread else np.nan,
            }
        )
    return pd.DataFrame(rows)
