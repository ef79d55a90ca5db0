#!/bin/bash
# The last device call of the 2026-12-02 session, on the merged tree:
#  1. the cost model's round 3 (issue 21): benchmarks/cost_validate_h200.py at the six shapes chosen after the
#     third freeze (model 462fdb9, predictions committed in fecc57c before this run), run id cost-validate3-20261202;
#  2. fa3_tc's default builds (d = 64 and 128, causal and not, bf16) against torch flash, cuDNN and fa2_tc
#     (benchmarks/fa3_tc_speed.py --defaults), run id fa3-defaults-20261202;
#  3. every test marked gpu (make test-gpu's selection): benchmarks/gpu_suite.sh, run id
#     gpu-tests-20261202.
# From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT set to the tree's commit:
#   bash benchmarks/session_end_h200.sh          (files under $OUT/cost3 and $OUT/gpu_tests; a short table last)
set -u
cd "$(dirname "$0")/.."
mkdir -p "$OUT/cost3" "$OUT/fa3" "$OUT/gpu_tests" "$OUT/logs"
FLASHIO_RUN_ID=cost-validate3-20261202 timeout "${COST_S:-160}" python3 benchmarks/cost_validate_h200.py \
  --out "$OUT/cost3" \
  --shapes '3,16,2200,64,0;2,12,3700,128,1;20,12,900,128,0;1,28,4100,64,1;7,10,1400,64,1;2,6,5600,128,0' \
  --variants torch_flash:bf16,fa2_tc_v5:bf16,eager_bf16:bf16,eager_bf16:fp16,numba_tiled:fp32 \
  --file cost_validate3_h200.csv --seconds 1.0 --budget-s 110 > "$OUT/logs/cost3_stdout.log" 2>&1
echo "cost3 rc=$?" >> "$OUT/logs/cost3_stdout.log"
FLASHIO_RUN_ID=fa3-defaults-20261202 timeout "${FA3_S:-130}" python3 benchmarks/fa3_tc_speed.py --out "$OUT/fa3" \
  --defaults --dtypes bf16 --causal no,yes --seq-lens 4096,16384 > "$OUT/logs/fa3_stdout.log" 2>&1
echo "fa3 rc=$?" >> "$OUT/logs/fa3_stdout.log"
RUN=20261202 TESTS_S="${TESTS_S:-170}" bash benchmarks/gpu_suite.sh
tail -40 "$OUT/logs/cost3_stdout.log"
tail -14 "$OUT/logs/fa3_stdout.log"
