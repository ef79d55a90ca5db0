"""The process pool and the report that the tensor-core speed benchmarks share (fa2_tc_speed.py, fa3_tc_speed.py).

numba compiles each kernel build for several seconds on one core. One spawned process per build
compiles them all at once on the device's cores; then the processes take turns under one lock to
time, so no two timings overlap. Each process reports once: its rows, or the error that stopped it.

    rows, errors = run_jobs(worker, jobs, seq_lens, processes=12)
    return report(rows, errors, out=DIR, filename="fa2_tc_speed.csv", what="...", started=t0)

A worker is a module-level function ``worker(job, seq_lens, lock) -> list of row dicts`` (the spawned
interpreter imports it by name). It takes ``lock`` around its timings and raises on failure.

Guards, so that one bad build costs its own rows and never the run's:

- a worker that raises is reported as ``"<job>: <error>"`` and the other jobs go on;
- a process that exits without reporting (a crash in the compiler, an import that fails in the
  spawned interpreter, the kernel's OOM killer) is reported as such once its exit is seen and a grace
  period has passed for a message still in the pipe; before these guards the parent waited for it
  forever;
- past ``deadline_s`` the processes still running are terminated and reported, and the rows already
  in are kept (the report is written either way).
"""

from __future__ import annotations

import csv
import io
import multiprocessing as mp
import os
import queue as queue_module
import sys
import time
import traceback


def _child(worker, index, job, seq_lens, lock, queue):
    """Run one job in a spawned process and report ("rows", rows) or ("error", text) once, tagged by index."""
    try:
        message = ("rows", worker(job, seq_lens, lock))
    except BaseException as ex:  # noqa: BLE001 (every failure, reported with its job; the others go on)
        message = ("error", f"{job}: {type(ex).__name__}: {ex}\n{traceback.format_exc()[-1500:]}")
    queue.put((index,) + message)


def run_jobs(worker, jobs, seq_lens, *, processes, deadline_s=None, grace_s=5.0, poll_s=1.0, log=print):
    """Run ``worker`` on every job, at most ``processes`` at a time; return (rows, errors).

    rows: every row of the jobs that reported rows, in the order the reports came; errors: one text per
    job that raised, exited without reporting, or was still running at ``deadline_s`` (seconds from the
    start; None: no deadline).
    """
    if processes < 1:
        raise ValueError(f"processes must be at least 1, got {processes}")
    ctx = mp.get_context("spawn")
    lock, queue = ctx.Lock(), ctx.Queue()
    pending = list(enumerate(jobs))
    running, exited_at = {}, {}  # index -> (process, job); index -> when its exit was first seen
    rows, errors = [], []
    t0 = time.monotonic()

    def note(kind, text):
        log(f"[{time.monotonic() - t0:6.1f} s] {kind}: {text}", flush=True)

    while pending or running:
        while pending and len(running) < processes:
            index, job = pending.pop(0)
            process = ctx.Process(target=_child, args=(worker, index, job, seq_lens, lock, queue))
            process.start()
            running[index] = (process, job)
        try:
            index, kind, payload = queue.get(timeout=poll_s)
        except queue_module.Empty:
            now = time.monotonic()
            for index, (process, job) in list(running.items()):
                if process.exitcode is None:
                    continue
                exited_at.setdefault(index, now)
                if now - exited_at[index] >= grace_s:
                    running.pop(index)
                    process.join()
                    errors.append(f"{job}: its process exited with code {process.exitcode} without reporting")
                    note("error", errors[-1])
            if deadline_s is not None and now - t0 > deadline_s:
                for process, job in running.values():
                    process.terminate()
                    process.join()
                    errors.append(f"{job}: still running at the {deadline_s:g} s deadline, terminated")
                    note("error", errors[-1])
                running.clear()
                pending.clear()
            continue
        process, job = running.pop(index)
        process.join()
        if kind == "rows":
            rows.extend(payload)
            note("rows", f"{len(payload)} from {job[0]}")
        else:
            errors.append(payload)
            note("error", payload)
    return rows, errors


def ratios_to_torch_flash(rows):
    """Set each row's ``ratio_to_torch_flash``: its median over torch flash's at the same dtype, causal, N and d
    ("" where torch flash has no row there)."""
    from gpu_kernels.measure.side_by_side import ratios_to_torch_flash as by_key

    return by_key(rows, ("dtype", "causal", "seq_len", "head_dim"), missing="")


def report(rows, errors, *, out, filename, what, started, config_width=34):
    """Write ``out/filename`` (the side by side's columns, + provenance sidecar), print the errors and a table
    last; return the exit status (1 if any job failed or any row's check did not pass)."""
    from measurements.schemas import SIDE_BY_SIDE

    ratios_to_torch_flash(rows)
    rows.sort(key=lambda r: (r["causal"], r["dtype"], r["head_dim"], r["seq_len"], r["kernel"], r["config"]))
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(SIDE_BY_SIDE.columns))
    w.writeheader()
    w.writerows(rows)
    os.makedirs(out, exist_ok=True)
    path = os.path.join(out, filename)
    try:
        from measurements.provenance import provenance, write_measurement

        write_measurement(
            path,
            buf.getvalue(),
            {
                **provenance({"what": what, "argv": sys.argv}),
                "errors": errors,
                "elapsed_s": round(time.monotonic() - started, 1),
            },
        )
    except Exception as ex:  # noqa: BLE001 (the rows matter more than their sidecar)
        print(f"provenance failed ({ex!r}); plain CSV written", flush=True)
        with open(path, "w") as f:
            f.write(buf.getvalue())
    for e in errors:
        print("ERROR", e[:600])
    cw = config_width
    print(
        f"{'causal':6} {'dtype':5} {'d':>3} {'N':>6} {'kernel':12} {'config':{cw}} {'ms':>8} {'TF/s':>6} "
        f"{'/flash':>6} {'err':>9}"
    )
    for r in rows:
        print(
            f"{r['causal']!s:6} {r['dtype']:5} {r['head_dim']:3} {r['seq_len']:6} {r['kernel']:12} "
            f"{r['config'][:cw]:{cw}} {float(r['median_ms']):8.3f} {float(r['tflops']):6.1f} "
            f"{r['ratio_to_torch_flash']:>6} {r['rel_err']:>9}{'' if r['ok'] else ' FAIL'}"
        )
    return 1 if errors or not all(r["ok"] for r in rows) else 0
