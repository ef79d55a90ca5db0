#!/bin/sh
# decode_tc on the H200 in one device call (issue 22 item 3): its GPU tests (counters = simlib, O against
# float64, the PTX) in the background, and the decode side by side (decode_tc, fa2_tc, torch SDPA's
# backends and the HBM copy bandwidth, bf16; gpu_kernels/measure/decode_side_by_side.py) in front.
# From the repo root on the device machine, with OUT set (and FLASHIO_COMMIT / FLASHIO_RUN_ID for the sidecars).
# The tests' kernels are tiny and mostly come while the side by side compiles; its medians resist the rest.
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
(timeout 110 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu -rfs tests/test_tensor_core_decode.py \
    >"$OUT/pytest_decode_gpu.log" 2>&1; echo "pytest rc=$?" >>"$OUT/pytest_decode_gpu.log") &
timeout 125 python3 -m gpu_kernels side-by-side --out "$OUT" --tag h200 --dtypes bf16 --causal no --budget-s 80 \
    --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
    --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
    --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 >"$OUT/decode_side_by_side.log" 2>&1
echo "side-by-side rc=$?"
wait
grep -v "^ *warn\|UserWarning" "$OUT/decode_side_by_side.log" | tail -n 60
tail -n 8 "$OUT/pytest_decode_gpu.log"
