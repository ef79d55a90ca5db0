#!/bin/sh
# decode4's follow-up device call (not run in session decode4: its allowance was spent by run decode4-run1,
# whose parts ran out of their 90 s while compiling the d = 64 variants and wrote no CSV). From the repo
# root with OUT set (FLASHIO_COMMIT and FLASHIO_RUN_ID for the sidecars): registers and local memory of
# the builds (also known locally: decode4_regs.py --local), then the parts at the three small caches with the version-5 variants (the CSV is rewritten
# after every shape, so a cut-short run keeps the shapes done). About 170 s.
set -u
# PARTS_ARGS="--decode-only" for the shortest call (the steps and split_only, no probes or copies: ≈ 90 s)
PARTS_ARGS=${PARTS_ARGS:-}
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/parts"
timeout 40 python3 benchmarks/decode4_regs.py >"$OUT/regs.log" 2>&1
echo "regs rc=$?"
timeout 150 python3 benchmarks/decode_parts_h200.py --out "$OUT/parts" --shapes 1,2,0 --stages "" --warps 8 \
    --other-splits no $PARTS_ARGS >"$OUT/parts/decode_parts_h200.log" 2>&1
echo "decode_parts rc=$?"
grep -v "Warn\|warn" "$OUT/regs.log" | tail -n 4
grep -v "warn\|Warning" "$OUT/parts/decode_parts_h200.log" | tail -n 50
