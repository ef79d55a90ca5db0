#!/usr/bin/env bash
# fa3_tc's default builds under Nsight Compute, next to its physical model (simlib/physical/fa3_tc_model.py,
# docs/L2_INVESTIGATION.md, "fa3_tc"). On the device, from the repository root, with numpy < 2.5 on
# PYTHONPATH:  OUT=/some/dir bash benchmarks/fa3_tc_ncu_h200.sh
#
# Writes under $OUT: profile_h200_fa3.csv (+ sidecar; `python -m gpu_kernels profile`, counting build
# left out), model_vs_ncu_h200_fa3.csv (+ sidecar), ncu_metrics_fa3.txt (the ncu version and the
# metric names of the GH100 that the candidates were picked from), profile_fa3.log, gpu_tests_fa3.log.
# The shapes were chosen, and the model committed, before this ran: d = 64 and 128, causal and not,
# one ragged N (4500), and B·H·N = 2^18 at d = 128, whose K/V (128 MiB) exceed the 60 MiB L2.
set -u
: "${OUT:?set OUT}"
SHAPES="4096x64:b1h16,4096x64:b1h16:causal,4500x64:b1h16,4096x128:b1h16:causal,8192x128:b2h16"
NCU=$(python3 -c "from gpu_kernels.measure.ncu import find_ncu; print(find_ncu() or '')")
[ -n "$NCU" ] || { echo "no ncu"; exit 1; }
# Counters that might see the wgmma's shared-memory reads and the instruction counts the model
# predicts; only those the GH100 knows are asked for (an unknown name stops ncu). The last two (the
# HGMMA's own shared wavefronts and bytes) were added after run fa3phys-ncu-20261202 listed them.
CANDIDATES="sm__inst_executed_pipe_tensor_op_gmma smsp__inst_executed_op_ldgsts smsp__sass_inst_executed_op_ldgsts
smsp__inst_executed_op_shared_ld smsp__inst_executed_op_shared_st l1tex__data_bank_reads l1tex__data_bank_writes
l1tex__data_pipe_lsu_wavefronts_mem_shared l1tex__data_pipe_lsu_wavefronts_mem_shared_op_gmma
sm__sass_data_bytes_mem_shared_op_gmma"
{ "$NCU" --version; "$NCU" --query-metrics --chip gh100; } > /tmp/ncu_query.txt 2>&1
EXTRA=""
for m in $CANDIDATES; do
    if grep -qE "(^|[[:space:]])${m}([[:space:]]|$)" /tmp/ncu_query.txt; then EXTRA="$EXTRA,$m.sum"; fi
done
{ head -3 /tmp/ncu_query.txt; echo "asked for: ${EXTRA#,}"; grep -E "gmma|shared|data_bank" /tmp/ncu_query.txt; } \
    > "$OUT/ncu_metrics_fa3.txt"
python3 -m gpu_kernels profile --out "$OUT" --tag h200_fa3 --kernels fa3_tc --shapes "$SHAPES" \
    --extra-metrics "${EXTRA#,}" --no-counted --timeout-s 150 --no-progress --ncu "$NCU" \
    > "$OUT/profile_fa3.log" 2>&1
echo "profile rc=$?"
python3 -m evidence model-vs-ncu --profile "$OUT/profile_h200_fa3.csv" --out "$OUT/model_vs_ncu_h200_fa3.csv" \
    >> "$OUT/profile_fa3.log" 2>&1
FLASHIO_GPU=1 timeout 60 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_physical_fa3.py \
    > "$OUT/gpu_tests_fa3.log" 2>&1
tail -2 "$OUT/gpu_tests_fa3.log"
python3 - "$OUT/model_vs_ncu_h200_fa3.csv" <<'EOF'
import csv, sys
for r in csv.DictReader(open(sys.argv[1])):
    c = "c" if "causal=1" in r["params"] else ""
    print(f"{r['batch']}x{r['heads']} N={r['seq_len']} d={r['head_dim']}{c} {r['metric'][:44]:44} {r['model']:>13} {r['ncu']:>13} {r['ratio']}")
EOF
