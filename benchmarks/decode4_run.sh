#!/bin/sh
# decode4's device call (issue 22 item 3, decode_tc version 5: the flagged tail), from the repo root with
# OUT set (FLASHIO_COMMIT and FLASHIO_RUN_ID for the sidecars): registers of the builds, the decode GPU
# tests in the background, the parts at the three small caches (4 and 8 warps, the atomic and the flagged
# tail), then the decode side by side at its eight shapes (the 2 GiB copy at both ends).
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/parts" "$OUT/dec"
(timeout 130 python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu -rfs tests/test_tensor_core_decode.py \
    >"$OUT/pytest_decode_gpu.log" 2>&1; echo "pytest rc=$?" >>"$OUT/pytest_decode_gpu.log") &
timeout 40 python3 benchmarks/decode4_regs.py >"$OUT/regs.log" 2>&1
echo "regs rc=$?"
timeout 90 python3 benchmarks/decode_parts_h200.py --out "$OUT/parts" --shapes 0,1,2 --stages "" --warps 8 \
    --other-splits no >"$OUT/parts/decode_parts_h200.log" 2>&1
echo "decode_parts rc=$?"
timeout 60 python3 -m gpu_kernels side-by-side --out "$OUT/dec" --tag h200 --dtypes bf16 --causal no \
    --budget-s 40 --variants decode_tc,torch_flash,torch_cudnn \
    --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
    --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
    --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 >"$OUT/dec/decode_side_by_side.log" 2>&1
echo "side-by-side rc=$?"
wait
grep -v "Warn\|warn" "$OUT/regs.log" | tail -n 4
tail -n 4 "$OUT/pytest_decode_gpu.log"
grep "decode_tc\|torch_cudnn\|hbm_copy" "$OUT/dec/decode_side_by_side.log" | cut -c1-130
grep -v "warn\|Warning" "$OUT/parts/decode_parts_h200.log" | tail -n 44
