#!/bin/sh
# decode7's device call (run decode7-run1): decode_tc's parts at one grid (s = 16, 128 blocks; B = 1,
# H = 32 / 8, d = 128) over four caches, L = 8192, 16384, 32768, 65536 (34, 67, 134, 268 MB; SHAPES 0, 5,
# 1, 6), each with the empty launches, the data path alone, the copies and plain reads of the same bytes;
# then the 134 MB d = 64 shape (SHAPES 2) at the model's splits. A line per part through the four caches
# splits each part into a fixed cost and a rate (PERFORMANCE.md, decode_tc version 7). From the repo root
# with OUT set (FLASHIO_COMMIT and FLASHIO_RUN_ID for the sidecars); each CSV is rewritten after every shape.
set -u
export FLASHIO_GPU=1 PYTHONUNBUFFERED=1
mkdir -p "$OUT/line" "$OUT/d64"
timeout "${LINE_S:-300}" python3 benchmarks/decode_parts_h200.py --out "$OUT/line" --shapes 0,5,1,6 --splits 16 \
    --stages "" --warps "" --v5 "" --other-splits no --per-thread 4 >"$OUT/line/decode_parts_h200.log" 2>&1
echo "line rc=$?"
timeout "${D64_S:-120}" python3 benchmarks/decode_parts_h200.py --out "$OUT/d64" --shapes 2 \
    --stages "" --warps "" --v5 "" --other-splits no --per-thread 4 >"$OUT/d64/decode_parts_h200.log" 2>&1
echo "d64 rc=$?"
for f in line d64; do grep -v "warn\|Warning" "$OUT/$f/decode_parts_h200.log" | tail -n 24; done
