"""The host's floor: a call issued from a Python loop takes at least the host's time to issue it.

The committed back-to-back loops (benchmarks/cost_validate_h200.py: a chunk of calls between two
synchronisations, NVML joules and wall seconds per call) never ran a FlashAttention call in less than
about 60 µs: at round 5's short causal shapes, (3, 11, 1340, 64) and (2, 9, 900, 128), torch flash,
fa2_tc_v5 and fa3_tc took 59–70 µs whatever their predicted GPU work (28–72 µs), and the board drew
261–440 W there against about 600 W at the other shapes: the GPU waited on the host between launches.
Each call is Python work before its kernel can start: ``sdpa_kernel`` (a context manager) and
``F.scaled_dot_product_attention``'s dispatch for torch flash; a numba-cuda launch of a plan's kernel
with its device-array arguments for the project's tensor-core kernels. So a call takes
max(its launches' predicted time, the host floor of its dispatch class), and the static power is paid
for that time.

The host's time per call is not one figure: round 6's loops took 61–127 µs a call for calls whose GPU
time alone was 34–66 µs, where round 5's shortest took 59–65 µs. So since round 7 it is an input
measured in the run being predicted, like the copy bandwidth: benchmarks/cost_validate_h200.py loops
each implementation of a dispatch class, at each head dim and mask of its plan, on a shape whose GPU
work is negligible (B = H = 1, N = 128) before the kernels (rows with pass = host_probe), and
`check.with_host_of_run` takes that run's figure (`predict(..., host_s=)`). Since round 8 the probe's
figure is the host's time to issue the call with the GPU kept busy (the calls queued behind a spin
kernel, timed on the host clock: `benchmarks/cost_validate_h200.py` `host_time_ms`), and the calls are
scored on their loop's own time (round 7's probes idled the GPU between calls and sat in NVML windows a
third longer than their 0.3 s loops: they overstated the numba plan's host time). Without a run (`simlib
predict`) the committed floor of the class stands in: the shortest per-call time any committed loop of
its implementations measured (`fit.fit_host_floor`). Classes with no committed loop near the floor
(the numba fp32 kernels, the eager chain, cupy: their shortest calls are milliseconds) have none.

>>> DISPATCH["torch_flash"], DISPATCH["fa3_tc"]
('host:torch_sdpa', 'host:numba_plan')
"""

from __future__ import annotations

#: Implementation → its dispatch class (a calibration class holding `t_host`, seconds).
DISPATCH = {
    "torch_flash": "host:torch_sdpa",
    "fa2_tc": "host:numba_plan",
    "fa2_tc_v4": "host:numba_plan",
    "fa2_tc_v5": "host:numba_plan",
    "fa3_tc": "host:numba_plan",
}
