"""How fast is the model at scale? Times the closed form and the trace (a benchmark, not a test).

Run with `make bench-trace`. The trace walks every tile (the inner loop vectorised with numpy) and
never allocates an N×N array.
"""

import time

from simlib import Workload, count

CASES = [
    ("closed", Workload(2**20, 256, dtype="fp16"), "228KiB"),
    ("trace", Workload(131072, 128, dtype="fp16"), "228KiB"),
    ("trace", Workload(131072, 128, dtype="fp16"), "192KiB"),
    ("trace", Workload(131072, 128, dtype="fp16"), "48KiB"),
]

print(
    f"{'method':<7}{'algorithm':<10}{'N':>9}{'d':>5}{'SRAM':>8}{'Br':>6}{'Bc':>6}{'tiles':>12}{'seconds':>10}"
)
for method, w, sram in CASES:
    for algorithm in ("naive", "fa1", "fa2"):
        start = time.perf_counter()
        r = count(algorithm, w, sram_bytes=sram, method=method)
        elapsed = time.perf_counter() - start
        tiles = r.tr * r.tc if r.tr else 1
        print(
            f"{method:<7}{algorithm:<10}{w.seq_len:>9}{w.head_dim:>5}{sram:>8}{r.block_rows or '-':>6}"
            f"{r.block_cols or '-':>6}{tiles:>12,}{elapsed:>10.4f}"
        )
