#!/bin/sh
# kernel3's second device call (issue 22 item 3): decode_tc's combine loads 8 partial rows at once. Its
# GPU tests, the decode parts at the three small-cache shapes, the decode side by side (run 1's 8 shapes);
# results under /tmp/k3r2, packed into $OUT/k3r2.tar; tables last. From the repo root with OUT set.
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
R=/tmp/k3r2
mkdir -p $R/parts $R/dec
timeout 45 python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu -rfs tests/test_tensor_core_decode.py \
    >$R/pytest_decode_gpu.log 2>&1
echo "pytest rc=$?" >>$R/pytest_decode_gpu.log
timeout 35 python3 benchmarks/decode_parts_h200.py --out $R/parts --shapes 0,1,2 >$R/parts/decode_parts_h200.log 2>&1
echo "decode_parts rc=$?"
timeout 50 python3 -m gpu_kernels side-by-side --out $R/dec --tag h200 --dtypes bf16 --causal no --budget-s 32 \
    --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
    --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
    --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 >$R/dec/decode_side_by_side.log 2>&1
echo "side-by-side rc=$?"
tar -C /tmp -cf "$OUT/k3r2.tar" k3r2
tail -n 3 $R/pytest_decode_gpu.log
grep "decode bf16" $R/dec/decode_side_by_side.log | grep "decode_tc\|cudnn\|fa2_tc" | cut -c1-120
grep hbm_copy $R/dec/decode_side_by_side.log
tail -n 36 $R/parts/decode_parts_h200.log
