#!/bin/bash
# One device call (helper hopper2, issue 22 item 2): fa3_tc with its causal blocks launched heaviest first.
#  1. the default builds, bf16, causal and not, N = 4096 and 16384 (benchmarks/fa3_tc_speed.py --defaults):
#     run id $RUN (fa3_tc_speed.csv, replaces current/'s), then fa3_tc's GPU tests (log in the same folder);
#  2. the causal candidates beside them (g1_bc64_sw, g2_bc32_sw at d = 64; g1_bc64_ov_sw, g2_bc64_ov_sw at
#     d = 128; or $VARIANT_LIST), causal and not (or $VAR_CAUSAL), bf16: run id $RUN-variants
#     (fa3_tc_variants.csv);
#  3. the default builds in fp16, same shapes: same run id (fa3_tc_fp16_defaults.csv).
# From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT set:
#   RUN=fa3-heavy-first-20261202 bash benchmarks/fa3_causal_h200.sh   (a short table last; run 1)
#   RUN=fa3-l2-sections-20261202 VARIANT_LIST=sec4,sec8,sec16,sec64 VAR_CAUSAL=yes bash ...   (run 2)
set -u
cd "$(dirname "$0")/.."
RUN=${RUN:-fa3-heavy-first-20261202}
mkdir -p "$OUT/defaults" "$OUT/variants"
S=(--causal no,yes --seq-lens 4096,16384)
FLASHIO_RUN_ID=$RUN timeout "${FA3_S:-90}" python3 benchmarks/fa3_tc_speed.py --out "$OUT/defaults" \
  --defaults --dtypes bf16 "${S[@]}" > "$OUT/variants/stdout.log" 2>&1
echo "defaults rc=$?" >> "$OUT/variants/stdout.log"
FLASHIO_GPU=1 timeout "${TESTS_S:-120}" python3 -m pytest -q -p no:cacheprovider -n 8 -m gpu -rfs \
  tests/test_tensor_core_fa3.py > "$OUT/defaults/pytest_fa3_gpu.log" 2>&1
echo "test-gpu rc=$?" >> "$OUT/defaults/pytest_fa3_gpu.log"
if [ "${VARIANTS:-1}" = 1 ]; then
  FLASHIO_RUN_ID=$RUN-variants timeout "${VAR_S:-100}" python3 benchmarks/fa3_tc_speed.py --out "$OUT/variants" \
    --variants "${VARIANT_LIST:-g1_bc64_sw,g2_bc32_sw,g1_bc64_ov_sw,g2_bc64_ov_sw}" --dtypes bf16 \
    --causal "${VAR_CAUSAL:-no,yes}" --seq-lens 4096,16384 \
    --file fa3_tc_variants.csv >> "$OUT/variants/stdout.log" 2>&1
  echo "variants rc=$?" >> "$OUT/variants/stdout.log"
  FLASHIO_RUN_ID=$RUN-variants timeout "${FP16_S:-70}" python3 benchmarks/fa3_tc_speed.py --out "$OUT/variants" \
    --defaults --dtypes fp16 "${S[@]}" --file fa3_tc_fp16_defaults.csv >> "$OUT/variants/stdout.log" 2>&1
  echo "fp16 rc=$?" >> "$OUT/variants/stdout.log"
fi
grep -E "rc=|ERROR" "$OUT/variants/stdout.log"
grep -E "passed|failed|error|rc=" "$OUT/defaults/pytest_fa3_gpu.log" | tail -4
python3 - "$OUT" <<'PY'
import csv, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/*/*.csv")):
    rows = list(csv.DictReader(open(f)))
    key = lambda r: (r["dtype"], r["causal"], r["head_dim"], r["seq_len"])
    base = {(r["kernel"],) + key(r): float(r["median_ms"]) for r in rows if r["kernel"].startswith("torch")}
    for r in rows:
        if r["kernel"] == "fa3_tc":
            ms = float(r["median_ms"])
            print(f.split("/")[-1][7:15], *key(r), r["config"][:24], ms,
                  round(ms / base[("torch_flash",) + key(r)], 3), round(ms / base[("torch_cudnn",) + key(r)], 3), r["ok"])
PY
