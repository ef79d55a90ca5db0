"""Lecture 7's lab: HBM traffic against N and the roofline for one setting of six controls.

One setting is N, d, the shared memory per thread block (`sram`, 0 = the GPU preset's), the tiles
Br and Bc (0 = each schedule's own) and the GPU preset. `figure` draws the two panels, `table` the
numbers the exercises ask for (the two of the default setting are the lecture's static view), and
`explorer` puts six controls above both and redraws them when a control moves. A redraw stays under a second on a laptop: every count is cached per setting
(`functools.lru_cache`), the sliders' limits per (d, SRAM, GPU), and the chart goes through
`course.live.LiveChart` (one render at a fixed layout, PNGs kept per setting).

Worked number: at the default setting (N = 4096, d = 64, the H200's shared memory, own tiles) naive
attention moves 4N² + 4Nd fp16 elements, (4·4096² + 4·4096·64)·2 B = 136,314,880 B.

>>> result("naive", 4096, 64, "h200", 0, 0, 0).hbm_bytes
136314880
"""

import textwrap
from functools import lru_cache

import pandas as pd

from simlib import Workload, compulsory_bytes, count, load_preset, preset_keys, roofline, saha_ye_bytes
from simlib.schedule_protocol import DoesNotFit

from . import charts
from .live import LiveChart

SEQ = [2**k for k in range(8, 17)]
DIMS = [16, 32, 64, 128, 256]
TILE_STEP, MAX_TILE = 16, 1024
DEFAULTS = {"n": 4096, "d": 64, "sram": 0, "br": 0, "bc": 0, "gpu": "h200"}
#: SRAM choices: 0 (the GPU preset's per-block shared memory), powers of two and every preset's size.
SRAM_CHOICES = sorted({2**k * 1024 for k in range(4, 9)} | {load_preset(k).sram_bytes for k in preset_keys()})
SCHEDULES = ("naive", "fa1", "fa2")


def tiled(algorithm, w, hw, sram, br, bc):
    """count() of a tiled schedule, or the model's refusal (DoesNotFit) when the tiles do not fit."""
    blocks = {k: v for k, v in (("block_rows", br), ("block_cols", bc)) if v}
    try:
        return count(algorithm, w, sram_bytes=sram, hardware=hw, **blocks)
    except DoesNotFit as refusal:
        return refusal


@lru_cache(maxsize=4096)
def result(algorithm, n, d, gpu, sram, br, bc):
    """`count()` of `algorithm` at one setting (naive ignores the SRAM and the tiles), cached; a tiled
    schedule whose tiles do not fit returns the model's refusal (`DoesNotFit`)."""
    if algorithm == "naive":
        return count("naive", Workload(n, d))
    hw = load_preset(gpu)
    return tiled(algorithm, Workload(n, d), hw, sram or hw.sram_bytes, br, bc)


@lru_cache(maxsize=256)
def tile_limits(d, sram, gpu):
    """(largest Br, largest Bc) the sliders offer, in steps of 16: the largest tile that FA1 or FA2
    accepts next to the smallest other tile (the model decides; pairs it refuses are drawn infeasible)."""

    def accepted(br, bc):
        return any(
            not isinstance(result(a, SEQ[-1], d, gpu, sram, br, bc), DoesNotFit) for a in ("fa1", "fa2")
        )

    sizes = range(TILE_STEP, MAX_TILE + 1, TILE_STEP)
    return tuple(max((b for b in sizes if accepted(*pair(b))), default=0) for pair in (
        lambda b: (b, TILE_STEP), lambda b: (TILE_STEP, b)))  # fmt: skip


def _fits(r):
    return not isinstance(r, DoesNotFit)


def figure(n, d, sram, br, bc, gpu):
    """Traffic vs N (left) and the roofline (right) for one setting; tiles the model refuses are shown
    as infeasible, with the model's reason. Returns the figure (not shown)."""
    import matplotlib.pyplot as plt

    hw = load_preset(gpu)
    sram_bytes = sram or hw.sram_bytes
    results = {a: result(a, n, d, gpu, sram, br, bc) for a in SCHEDULES}

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.8))
    curves = {"compulsory": [compulsory_bytes(Workload(m, d)) for m in SEQ]}
    curves["saha_ye"] = [saha_ye_bytes(Workload(m, d), sram_bytes) for m in SEQ]
    for name in SCHEDULES:
        if _fits(results[name]):
            curves[name] = [result(name, m, d, gpu, sram, br, bc).hbm_bytes for m in SEQ]
    for name in ("compulsory", "saha_ye", *SCHEDULES):
        if name not in curves:
            continue
        label = charts.LABELS[name].split(" (")[0]
        dashed = name in ("compulsory", "saha_ye")
        charts.plot_loglog(
            ax1,
            SEQ,
            curves[name],
            label,
            color=charts.COLORS[name],
            fit_from=2048,
            ms=4,
            ls="--" if dashed else "-",
        )
    ax1.axvline(n, color="black", lw=1, ls=":")
    for name, r in results.items():
        if _fits(r):
            ax1.plot([n], [r.hbm_bytes], "o", ms=10, mfc="none", mec=charts.COLORS[name], mew=2)
    refused = [f"{name.upper()} infeasible: {r}" for name, r in results.items() if not _fits(r)]
    if refused:
        text = "\n".join(textwrap.fill(line, 70) for line in refused)
        ax1.text(0.02, 0.98, text, transform=ax1.transAxes, va="top", fontsize=8, color="#d62728",
                 bbox={"facecolor": "white", "edgecolor": "#d62728"})  # fmt: skip
    charts.tokens_axis(ax1, SEQ)
    charts.bytes_axis(ax1, label="HBM traffic per head")
    shown = results["fa2"] if _fits(results["fa2"]) else None
    tiles = f"Br = {shown.block_rows}, Bc = {shown.block_cols}" if shown else f"Br = {br}, Bc = {bc}"
    ax1.set_title(
        f"d = {d}, SRAM {sram_bytes / 1024:.0f} KiB per block, FA2 {tiles} (at N = {n})", fontsize=11
    )
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8.5)

    points = [
        (name, roofline(r, hw).arithmetic_intensity, charts.COLORS[name])
        for name, r in results.items()
        if _fits(r)
    ]
    charts.plot_roofline(ax2, hw, "fp16", points=points, title=f"{hw.name}, fp16, N = {n}, d = {d}")
    for ax in (ax1, ax2):
        charts.name_device_memory(ax, hw)
    return fig


def table(n, d, sram, br, bc, gpu):
    """The numbers of one setting, one row per schedule: tiles, traffic, intensity, roofline time, bound."""
    hw = load_preset(gpu)
    rows, traffic = [], f"{hw.dram_name} traffic (MB)"
    for name in SCHEDULES:
        r = result(name, n, d, gpu, sram, br, bc)
        if not _fits(r):
            rows.append({"schedule": name, traffic: None, "bound": "infeasible: tiles do not fit"})
            continue
        rl = roofline(r, hw)
        rows.append(
            {
                "schedule": name,
                "Br": r.block_rows,
                "Bc": r.block_cols,
                "Tr": r.tr,
                "Tc": r.tc,
                traffic: round(r.hbm_bytes / 1e6, 3),
                "intensity (FLOP/B)": round(rl.arithmetic_intensity, 1),
                "roofline time (µs)": round(rl.time_s * 1e6, 2),
                "bound": rl.bound.replace("HBM", hw.dram_name),
            }
        )
    frame = pd.DataFrame(rows).set_index("schedule")
    ints = {c: "Int64" for c in ("Br", "Bc", "Tr", "Tc") if c in frame}
    return frame.astype(ints).astype(object).fillna("—")


def explorer(settings):
    """The six controls above the chart and the table, both drawn at once and redrawn when a control moves."""
    import ipywidgets as widgets

    limits = tile_limits(settings["d"], settings["sram"], settings["gpu"])
    sram_options = [("preset", 0)] + [(f"{s / 1024:g} KiB", s) for s in SRAM_CHOICES]
    gpu_options = [(load_preset(k).name, k) for k in preset_keys()]
    controls = {
        "n": widgets.Dropdown(options=SEQ, value=settings["n"], description="N"),
        "d": widgets.Dropdown(options=DIMS, value=settings["d"], description="d"),
        "sram": widgets.Dropdown(options=sram_options, value=settings["sram"], description="SRAM"),
        "br": widgets.IntSlider(settings["br"], 0, limits[0], TILE_STEP, description="Br"),
        "bc": widgets.IntSlider(settings["bc"], 0, limits[1], TILE_STEP, description="Bc"),
        "gpu": widgets.Dropdown(options=gpu_options, value=settings["gpu"], description="GPU"),
    }
    chart = LiveChart(figure, name="lecture 7 explorer")
    numbers = widgets.HTML()
    busy = []

    def redraw(change=None):
        if busy:  # a tile slider clamped to a new maximum: the outer redraw draws once
            return
        busy.append(True)
        try:
            values = {name: control.value for name, control in controls.items()}
            limits = tile_limits(values["d"], values["sram"], values["gpu"])
            for key, limit in zip(("br", "bc"), limits):
                controls[key].max = limit  # the sliders offer only tiles the model can accept
            values.update(br=controls["br"].value, bc=controls["bc"].value)
            chart.show(**values)
            numbers.value = table(**values).to_html(classes="flashio-lab-table")
        finally:
            busy.clear()

    for control in controls.values():
        control.observe(redraw, names="value")
    redraw()
    return widgets.VBox(
        [widgets.HBox([widgets.VBox(list(controls.values())[:3]), widgets.VBox(list(controls.values())[3:])]),
         chart.image, numbers]
    )  # fmt: skip
