#!/bin/bash
# Every test marked gpu (make test-gpu's selection) in WORKERS (default 8) processes on the device, its log with a sidecar; the
# ten slowest tests are listed at the end of the log. Used alone and by the session run scripts.
# From the repo root on the device, after the numpy-2.4 prefix, with FLASHIO_COMMIT and RUN (a run id) set:
#   RUN=20261203 TESTS_S=300 bash benchmarks/gpu_suite.sh          (files under $OUT/gpu_tests)
set -u
cd "$(dirname "$0")/.."
: "${RUN:?set RUN to a run id}"
mkdir -p "$OUT/gpu_tests"
FLASHIO_GPU=1 timeout "${TESTS_S:-300}" python3 -m pytest -q -p no:cacheprovider -n "${WORKERS:-8}" -m gpu -rfs --durations=10 \
  $(grep -l "mark.gpu" tests/*.py) > "$OUT/gpu_tests/pytest_gpu.log" 2>&1
echo "test-gpu rc=$?" >> "$OUT/gpu_tests/pytest_gpu.log"
FLASHIO_RUN_ID="gpu-tests-$RUN" python3 -m measurements.provenance "$OUT/gpu_tests/pytest_gpu.log" \
  --what "every test marked gpu (pytest -n ${WORKERS:-8} -m gpu) of the tree on the H200" > /dev/null
grep -E "passed|failed|error|rc=|^[0-9.]+s call" "$OUT/gpu_tests/pytest_gpu.log" | tail -16
