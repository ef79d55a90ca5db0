#!/usr/bin/env bash
# The tensor-core leftovers in one device call (helper G, 2026-12-01): naive_tc's ncu misses
# (SASS counts, extra counters), naive_tc / fa2_tc energy with the 16-byte shared-load calibration,
# and the causal 16-bit side by side. Everything lands under $OUT/r/ and comes back as one tarball.
set -u
export PATH="$PATH:/usr/local/cuda/bin" PYTHONUNBUFFERED=1
R="$OUT/r"
mkdir -p "$R/diag" "$R/energy" "$R/sbs"
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu,power.draw,power.limit --format=csv
timeout 200 python3 -m benchmarks.naive_tc_diagnostics --out "$R/diag" --timeout-s 170 \
    2>&1 | tee "$R/diag/naive_tc_diag_h200.log"
timeout 170 python3 benchmarks/energy_h200.py --out "$R/energy" --tag tc_h200 \
    --benches static,smem_read,smem_read_v4,fp32_fma --variants naive_tc,fa2_tc \
    --budget-s 110 --calib-s 3 --kernel-s 1.2 2>&1 | tee "$R/energy/energy_attention_tc_h200.log"
timeout 190 python3 -m gpu_kernels side-by-side --out "$R/sbs" --causal yes --tag h200_causal \
    --budget-s 120 2>&1 | tee "$R/sbs/tc_side_by_side_h200_causal.log"
tar czf "$OUT/g_tc_leftovers.tgz" -C "$OUT" r
ls -la "$R"/*
