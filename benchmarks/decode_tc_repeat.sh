#!/bin/sh
# The second device call of issue 22 item 3: the decode_tc and fa2_tc GPU tests after the tile step moved into
# tensor_core/flash_tile.py, beside three shapes of the decode side by side again (the run-to-run spread).
# From the repo root on the device machine, with OUT set.
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
(timeout 62 python3 -m pytest -q -p no:cacheprovider -n 12 -m gpu -rfs tests/test_tensor_core_decode.py tests/test_tensor_core_fa2.py >"$OUT/pytest_tc_gpu.log" 2>&1; echo "pytest rc=$?" >>"$OUT/pytest_tc_gpu.log") &
timeout 55 python3 -m gpu_kernels side-by-side --out "$OUT" --tag h200_repeat --dtypes bf16 --causal no --budget-s 25 \
  --variants decode_tc,torch_cudnn,torch_flash --shape 1:32:8:8192:128:1 --shape 8:32:8:32768:128:1 \
  --shape 1:32:8:131072:128:1 >"$OUT/decode_side_by_side_repeat.log" 2>&1
echo "side-by-side rc=$?"
wait
grep "decode bf16\|hbm_copy" "$OUT/decode_side_by_side_repeat.log"
tail -n 6 "$OUT/pytest_tc_gpu.log"
