"""The device memory's technology name on every hardware preset (`Hardware.dram_name`).

The model calls the off-chip level "HBM" on every preset; the labels use what the memory really is.
The expected names are typed from the vendor documents cited in each preset's `sources["dram_name"]`
(A100 whitepaper §4.6.1 "HBM2", A100 datasheet "80GB HBM2e", H100 whitepaper Table 3 "HBM3", H200
datasheet "141GB HBM3e", Ada whitepaper Appendix A "24 GB GDDR6X", T4 datasheet "16 GB GDDR6").
"""

import json

import pytest

from simlib import load_preset, preset_keys
from simlib.hardware import _dram_name
from simlib.presets import DATA_DIR

VENDOR_NAMES = {
    "a100-40gb": "HBM2",
    "a100-80gb": "HBM2e",
    "h100-sxm": "HBM3",
    "h200": "HBM3e",
    "rtx-4090": "GDDR6X",
    "t4": "GDDR6",
}


def _raw(key):
    return json.loads((DATA_DIR / "hardware" / f"{key}.json").read_text())


def test_every_preset_is_named():
    assert sorted(VENDOR_NAMES) == preset_keys()


@pytest.mark.parametrize("key", sorted(VENDOR_NAMES))
def test_dram_name_is_the_vendors(key):
    assert load_preset(key).dram_name == VENDOR_NAMES[key]


@pytest.mark.parametrize("key", sorted(VENDOR_NAMES))
def test_dram_name_has_a_source_that_quotes_it(key):
    raw = _raw(key)
    source = raw["sources"]["dram_name"]
    assert "http" in source and VENDOR_NAMES[key] in source
    # the level's own description names the same memory (it predates this field)
    hbm = next(level for level in raw["levels"] if level["name"] == "HBM")
    assert hbm["description"].startswith(VENDOR_NAMES[key] + " ")


def test_the_model_keeps_one_level_name():
    # GDDR6X and GDDR6 are not HBM, yet the level is addressed as "HBM" on every preset
    for key in VENDOR_NAMES:
        assert load_preset(key).level("HBM").capacity_bytes > 0
    assert not load_preset("t4").dram_name.startswith("HBM")


def test_a_preset_without_the_name_or_its_source_is_refused():
    raw = _raw("t4")
    del raw["dram_name"]
    with pytest.raises(ValueError, match=r"t4\.json: dram_name"):
        _dram_name(raw)
    raw = _raw("t4")
    del raw["sources"]["dram_name"]
    with pytest.raises(ValueError, match="dram_name"):
        _dram_name(raw)


def test_chart_labels_name_the_memory():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from course import charts

    fig, ax = plt.subplots()
    charts.plot_roofline(ax, load_preset("rtx-4090"), "fp16")
    for _ in range(2):  # twice: idempotent
        charts.name_device_memory(ax, load_preset("rtx-4090"))
    shown = [ax.xaxis.label.get_text(), *(t.get_text() for t in ax.texts)]
    assert "arithmetic intensity (FLOP per GDDR6X byte)" in shown
    assert any(t.startswith("GDDR6X ") and "TB/s" in t for t in shown)
    assert not any("HBM" in t for t in shown)
    charts.name_device_memory(ax, load_preset("h200"))  # nothing says "HBM" any more
    assert "HBM3e" not in ax.xaxis.label.get_text()
    ax.set_ylabel("HBM traffic")
    charts.name_device_memory(ax, load_preset("h200"))
    charts.name_device_memory(ax, load_preset("h200"))
    assert ax.yaxis.label.get_text() == "HBM3e traffic"
    plt.close(fig)
