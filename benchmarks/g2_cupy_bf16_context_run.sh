#!/usr/bin/env bash
# Helper G2's device calls (2026-12-01). Call 1 (commit 20d58e3, run g2-cupy-bf16-context-20261201)
# measured the CUDA context's device memory per framework (python -m gpu_kernels.measure.cuda_context
# --out DIR --repeats 5; for claim r) and tried the cupy bf16 rows, which failed in cupy.matmul (its
# > 2-D bf16 path). Call 2 (this script): cupy's naive attention through cublasGemmStridedBatchedEx in
# the dtype, bf16 and fp16, non-causal and causal, every row checked in the run. Lands in $OUT/g2/.
set -u
export PYTHONUNBUFFERED=1
R="$OUT/g2"
mkdir -p "$R"
nvidia-smi --query-gpu=name,driver_version,memory.used,memory.total,clocks.sm,temperature.gpu,power.draw \
    --format=csv 2>&1
timeout 300 python3 -m gpu_kernels side-by-side --out "$R" --dtypes bf16,fp16 --causal no,yes \
    --variants cupy_naive --tag h200_cupy --budget-s 240 2>&1 | tee "$R/tc_side_by_side_h200_cupy.log"
ls -la "$R"
