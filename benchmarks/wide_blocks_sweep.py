"""Readable kernel vs numba naive at N = 4096 for two wide-block shapes (a benchmark, GPU only).

The `numba_tiled_wide` variant of the harness (gpu_kernels.measure.variants) uses
`simlib.kernel_layout.tiled_wide_blocks(n, d, block_cols)`; this runs the harness for Bc = 8 (Br = 128 at
d = 64) and Bc = 16 (Br = 96), writing compare_wide_bc<Bc>.csv with provenance under $OUT. Prediction, written before the run
(docs/performance.md §6): Bc = 16 halves the barriers per key for 15 instead of 16 warps per SM:
18.4 → about 17.5 ms at d = 64.
"""

import functools
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from gpu_kernels.device import require_gpu  # noqa: E402
from gpu_kernels.measure import harness, variants  # noqa: E402
from simlib.kernel_layout import tiled_wide_blocks  # noqa: E402

OUT = os.environ["OUT"]
require_gpu("wide_blocks_sweep")
for block_cols in (8, 16):
    variants.tiled_wide_blocks = functools.partial(tiled_wide_blocks, block_cols=block_cols)
    harness.run(
        out_dir=OUT,
        tag=f"wide_bc{block_cols}",
        seq_lens=(4096,),
        head_dims=(64,),
        variants=("numba_naive", "numba_tiled_wide"),
        progress=False,
    )
