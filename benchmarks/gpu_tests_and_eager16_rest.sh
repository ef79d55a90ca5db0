#!/bin/bash
# One device call (2026-12-02): the GPU tests of the merged tree (every test marked gpu), then the 16-bit
# baseline's cases the first run's budget cut (benchmarks/eager16_h200.py --resume: the earlier run's whole
# cases are kept as they are, the rest measured now). Writes under $OUT; prints a short table last.
#   python3 -m pip install -q --no-index --no-deps --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:$PWD;
#   bash benchmarks/gpu_tests_and_eager16_rest.sh
set -u
cd "$(dirname "$0")/.."
mkdir -p "$OUT/eager16"
FLASHIO_GPU=1 timeout 150 python3 -m pytest -q -p no:cacheprovider -m gpu -rfs \
  $(grep -l "mark.gpu" tests/*.py) > "$OUT/test_gpu.log" 2>&1
echo "test-gpu rc=$?" >> "$OUT/test_gpu.log"
timeout 175 python3 benchmarks/eager16_h200.py --out "$OUT/eager16" --resume data/measurements/current \
  --time-budget-s 85 --budget-s 160 > /tmp/eager16_stdout.log 2>&1
echo "eager16 rc=$?"
grep -E "passed|failed|error|rc=" "$OUT/test_gpu.log" | tail -5
tail -45 /tmp/eager16_stdout.log
