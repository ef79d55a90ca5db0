#!/bin/sh
# decode4's follow-up device call, not run in session decode4 (its allowance went to run decode4-run1, whose
# parts ran out of their 90 s while compiling the d = 64 variants and wrote no CSV). From the repo root
# with OUT set (FLASHIO_COMMIT and FLASHIO_RUN_ID for the sidecars): the parts at 134 MB, 134 MB d = 64 and
# 34 MB, in that order, with the version-5 variants; the CSV is rewritten after every shape, so a run cut
# short keeps the shapes done. About 170 s; PARTS_ARGS="--decode-only" (the steps and split_only alone,
# no probes or copies) about 90 s. Registers and spills need no GPU: benchmarks/decode4_regs.py --local.
set -u
PARTS_ARGS=${PARTS_ARGS:-}
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/parts"
timeout 170 python3 benchmarks/decode_parts_h200.py --out "$OUT/parts" --shapes 1,2,0 --stages "" --warps 8 \
    --other-splits no $PARTS_ARGS >"$OUT/parts/decode_parts_h200.log" 2>&1
echo "decode_parts rc=$?"
grep -v "warn\|Warning" "$OUT/parts/decode_parts_h200.log" | tail -n 50
