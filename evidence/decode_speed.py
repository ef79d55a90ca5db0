"""decode_tc on the H200 against the HBM copy bandwidth and torch SDPA, as measured, next to simlib's
split-K model (``simlib.decode_time``) at the same splits.

The file is the decode side by side's (``python -m gpu_kernels side-by-side --shape B:H:H_kv:L:d:q_len``,
gpu_kernels/measure/decode_side_by_side.py): one row per (shape, variant) plus two ``hbm_copy`` rows (a
2 GiB device-to-device copy at the start and the end of the run, bytes read + written). Every variant is
credited with the same compulsory bytes (the ``decode`` schedule with one split: Q, K, V read once, O
written once), so ``frac_of_copy`` compares them on one footing.

``summary()`` gives one row per shape: the cache in MB, decode_tc at the splits simlib's model picked
(``default_splits``) and at the fastest of the splits measured, the SDPA backends, and the model's time for
the default splits (``split_k_time(..., fused=True)``: decode_tc's combine in the last split block of each
unit), with the H200 preset's 4.8 TB/s and with the run's own copy bandwidth.
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from measurements.manifest import lookup
from measurements.read import read_frame
from measurements.schemas import DECODE_SIDE_BY_SIDE as SCHEMA
from simlib import Workload, load_preset
from simlib.decode_time import split_k_time

DECODE_SIDE_BY_SIDE = "decode_side_by_side_h200.csv"
SHAPE = ["batch", "heads", "kv_heads", "query_len", "seq_len", "head_dim"]
#: The fraction of the copy bandwidth issue 22 asks of decode_tc at L >= 8K.
TARGET = 0.85


def read(path=None) -> pd.DataFrame:
    """The measured rows (checked ones and the copies), numbers as numbers; a damaged file raises
    measurements.read.MeasurementFileError naming it."""
    frame = read_frame(path if path is not None else lookup(DECODE_SIDE_BY_SIDE), SCHEMA)
    frame = frame[frame["ok"].astype(str) == "True"].copy()
    for col in ("median_ms", "gbps", "copy_gbps", "frac_of_copy", "hbm_bytes"):
        frame[col] = pd.to_numeric(frame[col])
    return frame


def copy_gbps(frame: pd.DataFrame) -> float:
    """The run's copy bandwidth (GB/s): the median of its hbm_copy rows."""
    return float(frame.loc[frame.kernel == "hbm_copy", "gbps"].median())


def with_bandwidth(hardware, bytes_per_s):
    """`hardware` with its HBM bandwidth replaced (the measured copy bandwidth)."""
    levels = tuple(
        dataclasses.replace(lv, bandwidth_bytes_per_s=bytes_per_s) if lv.name == "HBM" else lv
        for lv in hardware.levels
    )
    return dataclasses.replace(hardware, key=f"{hardware.key}-copy", levels=levels)


def summary(path=None) -> pd.DataFrame:
    """One row per measured decode shape (module docstring); times in µs."""
    frame = read(path)
    copy = copy_gbps(frame)
    h200 = load_preset("h200")
    at_copy = with_bandwidth(h200, copy * 1e9)
    rows = []
    for key, group in frame[frame.kernel != "hbm_copy"].groupby(SHAPE, sort=False):
        b, h, hkv, ql, n, d = (int(x) for x in key)
        dec = group[group.kernel == "decode_tc"]
        default = dec[dec.config.astype(str).str.endswith("(default splits)")]
        if default.empty:
            continue
        best = dec.loc[dec.median_ms.idxmin()]
        sdpa = group[group.kernel.astype(str).str.startswith("torch_")]
        best_sdpa = sdpa.loc[sdpa.median_ms.idxmin()] if not sdpa.empty else None
        s = int(default.splits.iloc[0])
        wl = Workload(n, d, b, h, dtype=str(default.dtype.iloc[0]), kv_heads=hkv, query_len=ql)
        times = {
            k: float(r.median_ms) * 1e3 for k, r in group.set_index("kernel").iterrows() if k != "decode_tc"
        }
        rows.append(
            {
                "B": b,
                "H": h,
                "H_kv": hkv,
                "q_len": ql,
                "L": n,
                "d": d,
                "KV cache (MB)": float(default.hbm_bytes.iloc[0]) / 1e6,
                "splits (model)": s,
                "decode_tc (µs)": float(default.median_ms.iloc[0]) * 1e3,
                "decode_tc / copy": float(default.frac_of_copy.iloc[0]),
                "fastest splits": int(best.splits),
                "fastest decode_tc / copy": float(best.frac_of_copy),
                "torch_flash (µs)": times.get("torch_flash"),
                "torch_cudnn (µs)": times.get("torch_cudnn"),
                "best SDPA": None if best_sdpa is None else str(best_sdpa.kernel),
                "decode_tc / best SDPA": None
                if best_sdpa is None
                else float(default.median_ms.iloc[0]) / float(best_sdpa.median_ms),
                "model, 4.8 TB/s (µs)": split_k_time(wl, h200, s, fused=True).time_s * 1e6,
                "model, copy BW (µs)": split_k_time(wl, at_copy, s, fused=True).time_s * 1e6,
            }
        )
    return pd.DataFrame(rows)
