# ---
# jupyter:
#   jupytext:
#     notebook_metadata_filter: kernelspec,-jupytext.text_representation.jupytext_version,-jupytext.formats
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#   kernelspec:
#     display_name: Python 3 (ipykernel)
#     language: python
#     name: python3
# ---

# %% [markdown] slideshow={"slide_type": "slide"}
# # Lecture 7 — Explore it yourself
#
# Sliders for the sequence length N, the head dimension d, the shared memory per thread block, the
# tiles Br and Bc (0 = each schedule's default tiles) and the GPU preset. Left: HBM traffic of the three schedules
# against N with the bounds; right: the HBM roofline of the chosen GPU with the three kernels on it.
#
# Where widgets are not rendered (an HTML export, a CI run) the static chart of the default settings
# below is what you see; in Jupyter, move the sliders under it.

# %% [markdown] slideshow={"slide_type": "notes"}
# Speaker notes: good questions to try live: (1) make SRAM tiny — which schedule suffers? (2) set
# Br = Bc for FA2 — does it catch up with FA1? (3) switch to the T4 — where is the ridge now?

# %% slideshow={"slide_type": "skip"}
import ipywidgets as widgets
import matplotlib.pyplot as plt
import pandas as pd
from IPython.display import Markdown, display

from simlib import Workload, compulsory_bytes, count, load_preset, preset_keys, roofline, saha_ye_bytes
from simlib.lectures import charts

charts.use_style()
SEQ = [2**k for k in range(8, 17)]
DIMS = [16, 32, 64, 128, 256]
SRAM_KIB = [0, 16, 32, 48, 64, 96, 128, 164, 192, 227, 256, 512, 1024]
DEFAULTS = {"n": 4096, "d": 64, "sram_kib": 0, "br": 0, "bc": 0, "gpu": "h200"}


def tiled(algorithm, w, sram, blocks):
    return count(algorithm, w, sram_bytes=sram, **blocks)


def draw(n, d, sram_kib, br, bc, gpu):
    """Traffic vs N and the roofline for one setting; explicit tiles that do not fit fall back."""
    hw = load_preset(gpu)
    sram = hw.sram_bytes if sram_kib == 0 else sram_kib * 1024
    blocks = {k: v for k, v in (("block_rows", br), ("block_cols", bc)) if v}
    note = ""
    try:
        for algorithm in ("fa1", "fa2"):
            tiled(algorithm, Workload(n, d), sram, blocks)
    except ValueError as err:
        note = f"{err}; showing the default tiles instead."
        blocks = {}
    w = Workload(n, d)
    results = {
        "naive": count("naive", w),
        "fa1": tiled("fa1", w, sram, blocks),
        "fa2": tiled("fa2", w, sram, blocks),
    }

    fig, (ax1, ax2) = plt.subplots(1, 2, figsize=(14, 5.8))
    curves = {
        "naive": [count("naive", Workload(m, d)).hbm_bytes for m in SEQ],
        "fa1": [tiled("fa1", Workload(m, d), sram, blocks).hbm_bytes for m in SEQ],
        "fa2": [tiled("fa2", Workload(m, d), sram, blocks).hbm_bytes for m in SEQ],
        "compulsory": [compulsory_bytes(Workload(m, d)) for m in SEQ],
        "saha_ye": [saha_ye_bytes(Workload(m, d), sram) for m in SEQ],
    }
    for name, ys in curves.items():
        charts.plot_loglog(
            ax1,
            SEQ,
            ys,
            charts.LABELS[name].split(" (")[0],
            color=charts.COLORS[name],
            fit_from=2048,
            ms=4,
            ls="--" if name in ("compulsory", "saha_ye") else "-",
        )
    ax1.axvline(n, color="black", lw=1, ls=":")
    for name in ("naive", "fa1", "fa2"):
        ax1.plot([n], [results[name].hbm_bytes], "o", ms=10, mfc="none", mec=charts.COLORS[name], mew=2)
    charts.tokens_axis(ax1, SEQ)
    charts.bytes_axis(ax1, label="HBM traffic per head")
    ax1.set_title(
        f"d = {d}, SRAM {sram / 1024:.0f} KiB per block, Br = {results['fa2'].block_rows}, "
        f"Bc = {results['fa2'].block_cols} (at N = {n})",
        fontsize=11,
    )
    ax1.legend(loc="upper center", bbox_to_anchor=(0.5, -0.13), ncol=2, fontsize=8.5)

    points = [
        (name, roofline(r, hw).arithmetic_intensity, charts.COLORS[name]) for name, r in results.items()
    ]
    charts.plot_roofline(ax2, hw, "fp16", points=points, title=f"{hw.name}, N = {n}, d = {d}")
    if note:
        fig.suptitle(note, color="#d62728", fontsize=10)
    plt.show()

    rows = []
    for name, r in results.items():
        rl = roofline(r, hw)
        rows.append(
            {
                "schedule": name,
                "Br": r.block_rows,
                "Bc": r.block_cols,
                "Tr": r.tr,
                "Tc": r.tc,
                "HBM traffic (MB)": round(r.hbm_bytes / 1e6, 3),
                "intensity (FLOP/B)": round(rl.arithmetic_intensity, 1),
                "HBM-roofline time (µs)": round(max(rl.compute_s, rl.level_s["HBM"]) * 1e6, 2),
            }
        )
    table = pd.DataFrame(rows).set_index("schedule")
    display(table.astype({c: "Int64" for c in ("Br", "Bc", "Tr", "Tc")}))


# %% [markdown] slideshow={"slide_type": "slide"}
# ## The default setting (static, always drawn)

# %%
draw(**DEFAULTS)

# %% [markdown] slideshow={"slide_type": "slide"}
# ## The sliders
#
# Move any slider and the charts redraw below them. SRAM "preset" uses the chosen GPU's per-block
# shared memory; Br = 0 or Bc = 0 uses each schedule's default tiles. Tiles whose on-chip working set
# does not fit the shared memory are refused: the chart falls back to the default tiles and says why,
# in red.

# %%
style = {"description_width": "170px"}
layout = widgets.Layout(width="520px")
controls = {
    "n": widgets.SelectionSlider(
        options=SEQ, value=DEFAULTS["n"], description="sequence length N", style=style, layout=layout
    ),
    "d": widgets.SelectionSlider(
        options=DIMS, value=DEFAULTS["d"], description="head dimension d", style=style, layout=layout
    ),
    "sram_kib": widgets.SelectionSlider(
        options=[("preset" if k == 0 else f"{k} KiB", k) for k in SRAM_KIB],
        value=DEFAULTS["sram_kib"],
        description="SRAM per block",
        style=style,
        layout=layout,
    ),
    **{
        key: widgets.IntSlider(
            value=DEFAULTS[key],
            min=0,
            max=1024,
            step=16,
            description=f"{name} (0 = default)",
            style=style,
            layout=layout,
        )
        for key, name in (("br", "Br"), ("bc", "Bc"))
    },
    "gpu": widgets.Dropdown(
        options=preset_keys(), value=DEFAULTS["gpu"], description="GPU preset", style=style, layout=layout
    ),
}
out = widgets.Output()


def redraw(_change=None):
    """Redraw into the output area below the sliders whenever one of them moves."""
    with out:
        out.clear_output(wait=True)
        draw(**{name: control.value for name, control in controls.items()})


# Nothing is drawn into the widget area until a slider moves: the static chart above shows the
# defaults, and a headless run (nbmake, nbconvert) never has to capture widget output.
for control in controls.values():
    control.observe(redraw, names="value")
display(widgets.VBox(list(controls.values())), out)

# %% tags=["remove-input"]
display(
    Markdown(
        f"Presets available: {', '.join(load_preset(k).name for k in preset_keys())}. "
        f"Every number on these charts is recomputed by `simlib` when a slider moves."
    )
)
