#!/bin/bash
# One device call (helper hopper3, issue 22 item 2, fa3_tc version 5): registers of the candidate builds,
# then the default build and the candidates (all64: every head in one causal section at d = 64; p2 / p1:
# the default build on a persistent grid of 2 / 1 blocks per SM; p2_all64 both) timed bf16, causal and
# not, N = 4096 and 16384, against torch flash and cuDNN in the same invocation (each build checked
# against float64 and fp32 math before it is timed), then fa3_tc's GPU tests.
# From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT set:
#   RUN=fa3-v5-persistent-20261203 bash benchmarks/fa3_v5_h200.sh   (run 1: static snake order, f233a08)
#   RUN=fa3-v5-dynamic-20261203 VARIANT_LIST=dflt,p1 HEAD_DIMS=128 REG_BUILDS="128:1" \
#     TESTS_K=persistent FILE=fa3_tc_v5_dynamic.csv bash benchmarks/fa3_v5_h200.sh   (run 2: the atomic
#     work counter; its own file name, so that importing it replaces no current file)
#   RUN=fa3-v6-dynamic-20261203 VARIANT_LIST=all64,p2_r128,dflt,p1 REG_BUILDS="64:0 64:2:128 128:0 128:1" \
#     SKIP_TESTS=1 FILE=fa3_tc_v6_dynamic.csv bash benchmarks/fa3_v5_h200.sh   (helper hopper4: run 2 at
#     d = 128, with d = 64's p2 capped at 128 registers; REG_BUILDS d:persistent[:max_registers])
#   RUN=fa3-v6-pingpong-20261203 VARIANT_LIST=all64,dflt,pp REG_BUILDS="64:0 128:0" REG_PINGPONG=1 \
#     TESTS_K="pingpong or ptx" FILE=fa3_tc_v6_pingpong.csv bash benchmarks/fa3_v5_h200.sh   (the ping-pong
#     order, Fa3Config.pingpong, beside the defaults; its GPU tests)
set -u
cd "$(dirname "$0")/.."
RUN=${RUN:-fa3-v5-persistent-20261203}
mkdir -p "$OUT/v5"
timeout 200 python3 - > "$OUT/v5/registers.txt" 2>&1 <<'PY' &
import dataclasses
from gpu_kernels.device import select_backend
select_backend(False)
from gpu_kernels.kernels.fa3_tc import default_config, fa3_tc_kernel, kernel_signature
import os
for d, p, *r in [tuple(map(int, x.split(":"))) for x in os.environ.get("REG_BUILDS", "64:0 64:2 128:0 128:1").split()]:
    for causal in (False, True):
        cfg = dataclasses.replace(default_config(d), persistent=p, max_registers=r[0] if r else None,
                                  pingpong=os.environ.get("REG_PINGPONG") == "1")
        disp = fa3_tc_kernel(cfg, "bf16", False, causal, False)
        sig = kernel_signature(p > 0)
        kern = disp.compile(sig)
        print(f"d={d} {cfg.name} causal={causal}: registers {kern.regs_per_thread}, "
              f"local bytes {kern.local_mem_per_thread}")
PY
REG_PID=$!
FLASHIO_RUN_ID=$RUN timeout "${FA3_S:-110}" python3 benchmarks/fa3_tc_speed.py --out "$OUT/v5" --no-fa2 \
  --variants "${VARIANT_LIST:-dflt,all64,p2,p2_all64,p1}" --head-dims "${HEAD_DIMS:-64,128}" \
  --dtypes bf16 --causal no,yes --seq-lens 4096,16384 --file "${FILE:-fa3_tc_speed.csv}" \
  > "$OUT/v5/stdout.log" 2>&1
echo "bench rc=$?" >> "$OUT/v5/stdout.log"
[ "${SKIP_TESTS:-0}" = 1 ] || FLASHIO_GPU=1 timeout "${TESTS_S:-90}" python3 -m pytest -q -p no:cacheprovider -n 4 -m gpu -rfs \
  -k "${TESTS_K:-fa3 or physical}" tests/test_tensor_core_fa3.py tests/test_physical_fa3.py > "$OUT/v5/pytest_fa3_gpu.log" 2>&1
echo "test-gpu rc=$?" >> "$OUT/v5/pytest_fa3_gpu.log"
wait $REG_PID
cat "$OUT/v5/registers.txt"
grep -E "rc=|ERROR|Error" "$OUT/v5/stdout.log" | tail -5
grep -E "passed|failed|error|rc=" "$OUT/v5/pytest_fa3_gpu.log" | tail -4
python3 - "$OUT" <<'PY'
import csv, glob, sys
for f in sorted(glob.glob(sys.argv[1] + "/v5/*.csv")):
    rows = list(csv.DictReader(open(f)))
    key = lambda r: (r["dtype"], r["causal"], r["head_dim"], r["seq_len"])
    base = {(r["kernel"],) + key(r): float(r["median_ms"]) for r in rows if r["kernel"].startswith("torch")}
    for r in sorted(rows, key=key):
        ms = float(r["median_ms"])
        print(*key(r), r["kernel"], r["config"][:26], ms,
              round(ms / base[("torch_flash",) + key(r)], 3), round(ms / base[("torch_cudnn",) + key(r)], 3), r["ok"])
PY
