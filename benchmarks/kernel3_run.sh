#!/bin/sh
# kernel3's device calls (issue 22 items 1-3), from the repo root with OUT set (FLASHIO_COMMIT and
# FLASHIO_RUN_ID for the sidecars). `sh benchmarks/kernel3_run.sh all` (run k3-run1): the GPU tests of
# fa2_tc and decode_tc, then one after another (no two timings overlap) fa2_tc_speed (24 default rows +
# bf16 variants), the decode parts, the decode side by side. `... decode` (run k3-run2): the decode GPU
# tests, the parts at the three small caches, the side by side. Results under /tmp/k3r, packed into
# $OUT/k3r.tar (at most 8 files come back); tables last.
set -u
MODE=${1:-all}
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
R=/tmp/k3r
mkdir -p $R/fa2 $R/parts $R/dec
if [ "$MODE" = all ]; then
    TESTS="tests/test_tensor_core_fa2.py tests/test_tensor_core_decode.py" PARTS="" T=75 BUDGET=50
else
    TESTS="tests/test_tensor_core_decode.py" PARTS="--shapes 0,1,2" T=45 BUDGET=32
fi
timeout $T python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu -rfs $TESTS >$R/pytest_gpu.log 2>&1
echo "pytest rc=$?" >>$R/pytest_gpu.log
if [ "$MODE" = all ]; then
    timeout 80 python3 benchmarks/fa2_tc_speed.py --out $R/fa2 --jobs 16 >$R/fa2/fa2_tc_speed.log 2>&1
    echo "fa2_tc_speed rc=$?"
fi
timeout $((T - 5)) python3 benchmarks/decode_parts_h200.py --out $R/parts $PARTS >$R/parts/decode_parts_h200.log 2>&1
echo "decode_parts rc=$?"
timeout $((BUDGET + 40)) python3 -m gpu_kernels side-by-side --out $R/dec --tag h200 --dtypes bf16 --causal no \
    --budget-s $BUDGET --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
    --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
    --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 >$R/dec/decode_side_by_side.log 2>&1
echo "side-by-side rc=$?"
tar -C /tmp -cf "$OUT/k3r.tar" k3r
tail -n 4 $R/pytest_gpu.log
grep "decode bf16" $R/dec/decode_side_by_side.log | grep "decode_tc\|cudnn\|fa2_tc" | cut -c1-120
tail -n 60 $R/parts/decode_parts_h200.log
[ "$MODE" = all ] && tail -n 45 $R/fa2/fa2_tc_speed.log | cut -c1-110
exit 0
