#!/bin/bash
# One device call on a merged tree, for issue 22 item 4 and the GPU suite:
#  1. `python -m gpu_kernels side-by-side --tag h200_every`: every kernel (fa2_tc, fa3_tc, naive_tc, cupy naive,
#     torch SDPA math / flash / cuDNN / efficient) at the issue's prefill shapes (bf16; N = 4096 and 16384,
#     d = 64 and 128, non-causal and causal; B·H·N = 2^18, H = 16), then decode_tc against SDPA and the HBM copy
#     at the decode shapes of the earlier decode runs (B:H:H_kv:L:d:q_len), same tag;
#     tc_side_by_side_h200.csv (a cost-fit input) is not touched;
#  2. every test marked gpu (make test-gpu's selection): benchmarks/gpu_suite.sh (TESTS_S, default 300 s).
# From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT and RUN (a run id) set:
#   RUN=every-20261203 bash benchmarks/every_kernel_h200.sh        (files under $OUT/every, $OUT/gpu_tests)
# (SKIP_PREFILL=1, SKIP_DECODE=1, SKIP_TESTS=1 leave a part out; DECODE_S, DECODE_BUDGET_S: the decode part's
# timeout and --budget-s)
set -u
cd "$(dirname "$0")/.."
: "${RUN:?set RUN to a run id}"
mkdir -p "$OUT/every" "$OUT/gpu_tests" "$OUT/logs"
if [ -z "${SKIP_PREFILL:-}" ]; then  # SKIP_PREFILL=1: the decode shapes and the tests only
FLASHIO_RUN_ID="$RUN" timeout "${PREFILL_S:-190}" python3 -m gpu_kernels side-by-side --out "$OUT/every" \
  --tag h200_every --dtypes bf16 --causal no,yes --seq-lens 4096,16384 --head-dims 64,128 \
  --budget-s "${PREFILL_BUDGET_S:-150}" > "$OUT/logs/prefill_stdout.log" 2>&1
echo "prefill rc=$?" >> "$OUT/logs/prefill_stdout.log"
fi
if [ -z "${SKIP_DECODE:-}" ]; then  # SKIP_DECODE=1: the prefill shapes and the tests only
FLASHIO_RUN_ID="$RUN" timeout "${DECODE_S:-75}" python3 -m gpu_kernels side-by-side --out "$OUT/every" \
  --tag h200_every --dtypes bf16 --causal no --budget-s "${DECODE_BUDGET_S:-50}" \
  --variants decode_tc,torch_flash,torch_cudnn,torch_efficient,torch_math \
  --shape 1:32:8:8192:128:1 --shape 1:32:8:32768:128:1 --shape 1:32:8:131072:128:1 \
  --shape 8:32:8:8192:128:1 --shape 8:32:8:32768:128:1 --shape 16:32:32:8192:128:1 \
  --shape 4:64:8:16384:64:1 --shape 8:32:8:8192:128:4 > "$OUT/logs/decode_stdout.log" 2>&1
echo "decode rc=$?" >> "$OUT/logs/decode_stdout.log"
fi
[ -z "${SKIP_TESTS:-}" ] && bash benchmarks/gpu_suite.sh  # SKIP_TESTS=1: no GPU suite (run it alone)
[ -f "$OUT/logs/prefill_stdout.log" ] && tail -30 "$OUT/logs/prefill_stdout.log"
[ -f "$OUT/logs/decode_stdout.log" ] && tail -14 "$OUT/logs/decode_stdout.log"
