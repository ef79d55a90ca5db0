#!/bin/sh
# decode3's device call (issue 22 item 3, decode_tc version 4: 8 warps), from the repo root with OUT set
# (FLASHIO_COMMIT and FLASHIO_RUN_ID for the sidecars): the decode GPU tests in the background, the parts
# at the three small caches (4 and 8 warps; the deeper rings of run decode2 left out), then the decode
# side by side at its eight shapes (decode_tc with 4 and 8 warps, SDPA, the 2 GiB copy at both ends).
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/parts" "$OUT/dec"
(timeout 130 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu -rfs tests/test_tensor_core_decode.py \
    >"$OUT/pytest_decode_gpu.log" 2>&1; echo "pytest rc=$?" >>"$OUT/pytest_decode_gpu.log") &
timeout 95 python3 benchmarks/decode_parts_h200.py --out "$OUT/parts" --shapes 0,1,2 --stages "" --warps 8 \
    >"$OUT/parts/decode_parts_h200.log" 2>&1
echo "decode_parts rc=$?"
timeout 80 python3 -m gpu_kernels side-by-side --out "$OUT/dec" --tag h200 --dtypes bf16 --causal no \
    --budget-s 55 --variants decode_tc,torch_flash,torch_cudnn,torch_efficient,torch_math \
    --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
    --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
    --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 >"$OUT/dec/decode_side_by_side.log" 2>&1
echo "side-by-side rc=$?"
wait
tail -n 4 "$OUT/pytest_decode_gpu.log"
grep "decode_tc\|torch_cudnn\|hbm_copy" "$OUT/dec/decode_side_by_side.log" | cut -c1-130
grep -v "warn\|Warning" "$OUT/parts/decode_parts_h200.log" | tail -n 40
