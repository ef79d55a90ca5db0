#!/usr/bin/env bash
# Helper G2's device call (2026-12-01): the CUDA context's device memory per framework (for claim r),
# then the cupy naive rows in bf16 that the committed side-by-side files lack (cupy 14.2 takes bf16
# once ml_dtypes is imported first), non-causal and causal, with torch's flash backend timed beside
# them for the ratio column. Everything lands in $OUT/g2/ (at most 8 files: no tarball needed).
set -u
export PYTHONUNBUFFERED=1
R="$OUT/g2"
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm,temperature.gpu,power.draw \
    --format=csv 2>&1
timeout 150 python3 -m gpu_kernels.measure.cuda_context --out "$R" --repeats 5 2>&1 | tee "$R/cuda_context_h200.log"
timeout 280 python3 -m gpu_kernels side-by-side --out "$R" --dtypes bf16 --causal no,yes \
    --variants cupy_naive,torch_flash --tag h200_cupy_bf16 --budget-s 220 2>&1 \
    | tee "$R/tc_side_by_side_h200_cupy_bf16.log"
ls -la "$R"
