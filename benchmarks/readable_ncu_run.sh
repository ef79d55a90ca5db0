#!/usr/bin/env bash
# Run 14 on the device: Nsight Compute's occupancy, warp-state and scheduler sections for the
# readable kernel at N = 4096 (B = 1, H = 16), default and wide blocks at d = 64 and 128: why the
# default 24x24 blocks at d = 128 stay slow. Files under $OUT.
set -u
PY=${PY:-python3}
: > "$OUT/readable_ncu_h200.csv"
for cfg in "64 48 48" "64 128 8" "128 24 24" "128 64 8"; do
  set -- $cfg
  ncu --section Occupancy --section WarpStateStats --section SchedulerStats --section LaunchStats \
      --kernel-name regex:fa2_forward --clock-control none --csv --page details --print-units base \
      $PY -m gpu_kernels run --kernel tiled --seq-len 4096 --head-dim $1 --heads 16 --block-rows $2 --block-cols $3 \
      2>> "$OUT/readable_ncu_h200.log" | grep '^"' >> "$OUT/readable_ncu_h200.csv"
  echo "d=$1 Br=$2 Bc=$3: rc=${PIPESTATUS[0]}"
done
$PY -c "
import os, sys; sys.path.insert(0, '.')
from measurements.provenance import attach, provenance
from simlib.physical import l2_evidence as d
record = provenance({'what': 'ncu sections Occupancy, WarpStateStats, SchedulerStats, LaunchStats of the readable tiled kernel, '
            'N=4096, B=1, H=16, (d, Br, Bc) in (64,48,48), (64,128,8), (128,24,24), (128,64,8); '
            '--clock-control none --csv --page details --print-units base'})
for name in ('readable_ncu_h200.csv', 'readable_ncu_h200.log'):
    attach(os.path.join(os.environ['OUT'], name), record)
"
