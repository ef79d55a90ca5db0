#!/usr/bin/env bash
# Run 9 on the device: the readable kernel's SASS, and the L2 re-read probe under ncu twice: each
# element re-read by the same thread ("own") and by a block 131 blocks away ("rotating"); the
# readable kernel's DRAM reads at N = 8K-20K (B = 1, H = 4), where its K/V re-reads miss L2.
# Files under $OUT. Usage: bash benchmarks/l2_sharing_run.sh
set -u
PY=${PY:-python3}
METRICS=dram__bytes_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum
$PY benchmarks/h200_diagnostics.py --sass-only
for mode in own rotating; do
  flag=""; [ "$mode" = rotating ] && flag="--rotating"
  ncu --metrics $METRICS --cache-control all --clock-control none --csv \
      $PY benchmarks/h200_diagnostics.py --ncu-driver $flag > "$OUT/l2_ncu_${mode}_h200.csv" 2> "$OUT/l2_ncu_${mode}_h200.log"
  echo "$mode: rc=$? $(grep -c dram__bytes_read "$OUT/l2_ncu_${mode}_h200.csv") launches"
done
ncu --metrics dram__bytes_read.sum,lts__t_sectors_op_read.sum,lts__t_sectors_srcunit_ltcfabric.sum,launch__registers_per_thread \
    --kernel-name regex:fa2_forward --cache-control all --clock-control none --csv \
    $PY benchmarks/h200_diagnostics.py --tiled-ncu-driver > "$OUT/tiled_l2_ncu_h200.csv" 2> "$OUT/tiled_l2_ncu_h200.log"
echo "tiled: rc=$? $(grep -c dram__bytes_read "$OUT/tiled_l2_ncu_h200.csv") launches"
$PY -c "
import os, sys; sys.path.insert(0, '.')
from measurements.provenance import attach, provenance
from simlib.physical import l2_evidence as d
record = provenance({'what': 'ncu of the L2 re-read probe, own and rotating readers, sizes (MiB) %s, %d passes; the tiled '
            'kernel at %s (N, d), B=1, H=4; --cache-control all --clock-control none' % (d.NCU_SIZES_MIB, d.NCU_PASSES, d.TILED_NCU_SHAPES)})
for name in ('l2_ncu_own_h200.csv', 'l2_ncu_own_h200.log', 'l2_ncu_rotating_h200.csv', 'l2_ncu_rotating_h200.log',
             'tiled_l2_ncu_h200.csv', 'tiled_l2_ncu_h200.log'):
    attach(os.path.join(os.environ['OUT'], name), record)
"
