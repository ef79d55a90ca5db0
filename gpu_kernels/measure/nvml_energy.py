"""Energy of a GPU call from NVML's total-energy counter, edge-aligned, with the idle power subtracted.

``nvmlDeviceGetTotalEnergyConsumption`` (nvidia-ml-py, module ``pynvml``) is the board's energy in
millijoules since the driver loaded; it moves in steps (every 20-100 ms, depending on the GPU), so a
call is measured by repeating it for seconds between two *steps* of the counter:

1. wait for the counter to step (``wait_step``): energy E0 at host time t0;
2. repeat the call for at least ``seconds``, synchronising every chunk of calls (so the host never
   queues far ahead of the GPU);
3. synchronise, wait for the next step: E1 at t1.

Then the mean power is (E1 − E0) / (t1 − t0), and the call's energy above a baseline power P_b is
``(E1 − E0 − P_b·(t1 − t0)) / calls`` (``above_baseline``). The tail between the last call's end and
the step at t1 is at most one update period at near-idle power; subtracting the baseline over the
whole window removes almost all of it. Clocks, temperature and power are sampled after each chunk.

Worked number: a run of 3.0 s that used 1500 J over 20 calls, against an idle power of 100 W, is
(1500 − 100·3.0) / 20 = 60 J per call above idle:

>>> above_baseline({"joules": 1500.0, "seconds": 3.0, "calls": 20}, 100.0)
60.0

Importing this module does not import pynvml; ``NvmlCounter()`` does (only the device machine has it).
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable

#: Give up waiting for a counter step after this long (the counter then moves coarser than expected).
STEP_TIMEOUT_S = 0.5
#: Synchronise after calls worth about this many seconds (chunk size from the warm-up time).
CHUNK_S = 0.1


class NvmlCounter:
    """GPU `index`'s energy counter (mJ), clocks (MHz), temperature (°C) and power (W) through NVML."""

    def __init__(self, index: int = 0):
        import pynvml

        self.nvml = pynvml
        pynvml.nvmlInit()
        self.handle = pynvml.nvmlDeviceGetHandleByIndex(index)

    def millijoules(self) -> int:
        return int(self.nvml.nvmlDeviceGetTotalEnergyConsumption(self.handle))

    def state(self) -> dict:
        """SM and memory clocks, temperature and instantaneous power, as NVML reports them now."""
        n, h = self.nvml, self.handle
        out = {}
        for key, read in (
            ("sm_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_SM)),
            ("mem_mhz", lambda: n.nvmlDeviceGetClockInfo(h, n.NVML_CLOCK_MEM)),
            ("temp_c", lambda: n.nvmlDeviceGetTemperature(h, n.NVML_TEMPERATURE_GPU)),
            ("power_w", lambda: n.nvmlDeviceGetPowerUsage(h) / 1000.0),
        ):
            try:
                out[key] = float(read())
            except Exception:  # a reading this driver does not give: left out, not fatal
                out[key] = None
        return out

    def limits(self) -> dict:
        """Power limit and maximum clocks (recorded once per run; never changed)."""
        n, h = self.nvml, self.handle
        out = {}
        for key, read in (
            ("power_limit_w", lambda: n.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0),
            ("max_sm_mhz", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_SM)),
            ("max_mem_mhz", lambda: n.nvmlDeviceGetMaxClockInfo(h, n.NVML_CLOCK_MEM)),
        ):
            try:
                out[key] = float(read())
            except Exception:
                out[key] = None
        return out


def wait_step(
    counter, clock: Callable[[], float] = time.perf_counter, timeout_s: float = STEP_TIMEOUT_S
) -> tuple[int, float, bool]:
    """(mJ, host time, stepped) at the next change of the counter, or at the timeout (stepped False)."""
    first = counter.millijoules()
    start = clock()
    while True:
        now_mj, now = counter.millijoules(), clock()
        if now_mj != first:
            return now_mj, now, True
        if now - start > timeout_s:
            return now_mj, now, False


def _summary(samples: list[dict], key: str) -> tuple[float | None, float | None, float | None]:
    values = [s[key] for s in samples if s.get(key) is not None]
    if not values:
        return None, None, None
    return statistics.median(values), min(values), max(values)


def measure(
    call: Callable[[], object],
    sync: Callable[[], object],
    counter,
    seconds: float,
    call_seconds: float | None = None,
    clock: Callable[[], float] = time.perf_counter,
) -> dict:
    """Energy of repeating `call` for at least `seconds` between two counter steps.

    `call_seconds` (one call's time, e.g. from the warm-up) sets the chunk between synchronisations;
    without it every call is followed by a sync. Returns calls, seconds (the window between the two
    steps), loop_seconds (from the first step to the last chunk's synchronisation: the calls' own time,
    without the tail the window waits for the next step, up to one update period), joules, watts, the
    steps' flags, and median/min/max of the SM clock, memory clock, temperature and power sampled after
    every chunk (the first sample before the first call)."""
    chunk = 1 if not call_seconds else max(1, int(CHUNK_S / call_seconds))
    sync()
    samples = [counter.state()]
    e0, t0, stepped0 = wait_step(counter, clock)
    calls = 0
    while clock() - t0 < seconds:
        for _ in range(chunk):
            call()
        calls += chunk
        sync()
        samples.append(counter.state())
    t_loop = clock()
    e1, t1, stepped1 = wait_step(counter, clock)
    out = {
        "calls": calls,
        "seconds": t1 - t0,
        "loop_seconds": t_loop - t0,
        "joules": (e1 - e0) / 1000.0,
        "steps_seen": stepped0 and stepped1,
    }
    out["watts"] = out["joules"] / out["seconds"] if out["seconds"] > 0 else None
    for key in ("sm_mhz", "mem_mhz", "temp_c", "power_w"):
        med, lo, hi = _summary(samples[1:] or samples, key)
        out[key], out[f"{key}_min"], out[f"{key}_max"] = med, lo, hi
    out["temp_c_start"] = samples[0].get("temp_c")
    return out


def measure_idle(
    counter,
    seconds: float,
    clock: Callable[[], float] = time.perf_counter,
    sleep: Callable[[float], object] = time.sleep,
) -> dict:
    """The board's power with nothing running: the counter between two steps ≥ `seconds` apart."""
    before = counter.state()
    e0, t0, stepped0 = wait_step(counter, clock)
    sleep(seconds)
    after = counter.state()
    e1, t1, stepped1 = wait_step(counter, clock)
    joules = (e1 - e0) / 1000.0
    return {
        "calls": 0,
        "seconds": t1 - t0,
        "joules": joules,
        "watts": joules / (t1 - t0),
        "steps_seen": stepped0 and stepped1,
        "sm_mhz": after.get("sm_mhz"),
        "mem_mhz": after.get("mem_mhz"),
        "temp_c": after.get("temp_c"),
        "temp_c_start": before.get("temp_c"),
        "power_w": after.get("power_w"),
    }


def above_baseline(run: dict, baseline_w: float) -> float:
    """Joules per call above `baseline_w` watts: (E − P_b·T) / calls."""
    if not run.get("calls"):
        raise ValueError("above_baseline: the run has no calls")
    return (run["joules"] - baseline_w * run["seconds"]) / run["calls"]
