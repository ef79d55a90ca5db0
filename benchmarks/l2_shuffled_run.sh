#!/usr/bin/env bash
# Run 10 on the device: the shuffled L2 re-read probe (every line re-read from random SMs) and the
# readable kernel at N = 8K-20K (B = 1, H = 4) under ncu. Files under $OUT.
set -u
PY=${PY:-python3}
METRICS=dram__bytes_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum
ncu --metrics $METRICS --cache-control all --clock-control none --csv \
    $PY benchmarks/h200_diagnostics.py --shuffled-ncu-driver > "$OUT/l2_ncu_shuffled_h200.csv" 2> "$OUT/l2_ncu_shuffled_h200.log"
echo "shuffled: rc=$? $(grep -c dram__bytes_read "$OUT/l2_ncu_shuffled_h200.csv") launches"
ncu --metrics $METRICS,launch__registers_per_thread --kernel-name regex:fa2_forward \
    --cache-control all --clock-control none --csv \
    $PY benchmarks/h200_diagnostics.py --tiled-ncu-driver > "$OUT/tiled_l2_ncu_h200.csv" 2> "$OUT/tiled_l2_ncu_h200.log"
echo "tiled: rc=$? $(grep -c dram__bytes_read "$OUT/tiled_l2_ncu_h200.csv") launches"
$PY -c "
import os, sys; sys.path.insert(0, '.')
from measurements.provenance import attach, provenance
from simlib.physical import l2_evidence as d
from benchmarks.h200_diagnostics import SHUFFLE_BLOCKS
record = provenance({'what': 'ncu of the shuffled L2 re-read probe (%d blocks, sizes (MiB) %s, %d passes, one random permutation '
            'per pass, seed 2026) and of the tiled kernel at %s (N, d), B=1, H=4, default blocks; '
            '--cache-control all --clock-control none' % (SHUFFLE_BLOCKS, d.NCU_SIZES_MIB, d.NCU_PASSES, d.TILED_NCU_SHAPES)})
for name in ('l2_ncu_shuffled_h200.csv', 'l2_ncu_shuffled_h200.log', 'tiled_l2_ncu_h200.csv', 'tiled_l2_ncu_h200.log'):
    attach(os.path.join(os.environ['OUT'], name), record)
"
