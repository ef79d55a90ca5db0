#!/bin/bash
# One device call (2026-12-02): fa3_tc with its causal blocks launched heaviest first (grid (B·H, Tr), as
# fa2_tc version 5): the default builds timed again causal and not (benchmarks/fa3_tc_speed.py --defaults,
# run id fa3-heavy-first-20261202; the non-causal PTX is byte-identical to the run before), then fa3_tc's
# GPU tests. From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT set.
set -u
cd "$(dirname "$0")/.."
mkdir -p "$OUT/fa3" "$OUT/gpu_tests"
FLASHIO_RUN_ID=fa3-heavy-first-20261202 timeout 90 python3 benchmarks/fa3_tc_speed.py --out "$OUT/fa3" \
  --defaults --dtypes bf16 --causal no,yes --seq-lens 4096,16384 > "$OUT/fa3_stdout.log" 2>&1
echo "fa3 rc=$?" >> "$OUT/fa3_stdout.log"
FLASHIO_GPU=1 timeout 100 python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu -rfs tests/test_tensor_core_fa3.py \
  > "$OUT/gpu_tests/pytest_fa3_gpu.log" 2>&1
echo "test-gpu rc=$?" >> "$OUT/gpu_tests/pytest_fa3_gpu.log"
FLASHIO_RUN_ID=fa3-heavy-first-20261202 python3 -m measurements.provenance "$OUT/gpu_tests/pytest_fa3_gpu.log" \
  --what "fa3_tc's GPU tests (heavy-first causal order) on the H200" > /dev/null
grep -v Warn "$OUT/fa3_stdout.log" | tail -18
grep -E "passed|failed|error|rc=" "$OUT/gpu_tests/pytest_fa3_gpu.log" | tail -4
