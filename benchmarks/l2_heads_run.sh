#!/usr/bin/env bash
# Run 11 on the device: the readable kernel with H = 1, 2, 3 heads (N = 16K at d = 64 and 128,
# N = 12K at d = 128) under ncu: DRAM reads, and ncu's own occupancy and wave counts.
set -u
PY=${PY:-python3}
METRICS=dram__bytes_read.sum,lts__t_sectors_op_read.sum,launch__registers_per_thread,launch__occupancy_limit_shared_mem,launch__occupancy_limit_registers,launch__waves_per_multiprocessor,launch__grid_size
ncu --metrics $METRICS --kernel-name regex:fa2_forward --cache-control all --clock-control none --csv \
    $PY benchmarks/h200_diagnostics.py --tiled-ncu-driver --heads > "$OUT/tiled_heads_l2_ncu_h200.csv" 2> "$OUT/tiled_heads_l2_ncu_h200.log"
echo "tiled heads: rc=$? $(grep -c dram__bytes_read "$OUT/tiled_heads_l2_ncu_h200.csv") launches"
$PY -c "
import os, sys; sys.path.insert(0, '.')
from measurements.provenance import attach, provenance
from simlib.physical import l2_evidence as d
record = provenance({'what': 'ncu of the tiled kernel at (N, d, H) %s, B=1, default blocks; --cache-control all '
            '--clock-control none' % (d.TILED_HEADS_NCU_SHAPES,)})
for name in ('tiled_heads_l2_ncu_h200.csv', 'tiled_heads_l2_ncu_h200.log'):
    attach(os.path.join(os.environ['OUT'], name), record)
"
