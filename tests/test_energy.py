"""The energy model (simlib.energy), its CLI, the kernel check and the claim: expected values by hand.

Every expected number is derived here from the formulas of docs/COUNTING.md and the figures'
definitions (published per-bit figures × 8, the calibration's (P − P_static) / rate), or read
independently from the committed CSV with the csv module; none is copied from the code's output.
"""

import csv
import json
import statistics
import subprocess
import sys
from pathlib import Path

import pytest

from simlib import Workload, count
from simlib.energy import calibrate, energy, energy_keys, load_energy_table
from simlib.hardware import preset_keys

ROOT = Path(__file__).resolve().parents[1]
CALIBRATION = ROOT / "data" / "measurements" / "current" / "energy_calibration_h200.csv"
ATTENTION = ROOT / "data" / "measurements" / "current" / "energy_attention_h200.csv"
COUNTERS = ROOT / "data" / "measurements" / "current" / "energy_counters_h200.csv"
COUNTER_KERNELS = ROOT / "data" / "measurements" / "current" / "energy_counters_h200_kernels.csv"


def bench_figures(rows, bench):
    """pJ per unit of each repeat of `bench`: (its power − the same repeat's static power) / its rate."""
    static = {r["repeat"]: float(r["watts"]) for r in rows if r["bench"] == "static"}
    return [
        (float(r["watts"]) - static[r["repeat"]]) / float(r["rate_per_s"]) * 1e12
        for r in rows
        if r["bench"] == bench
    ]


def rows_of(path):
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_every_hardware_preset_has_energy_figures_with_a_source_each():
    assert energy_keys() == preset_keys()
    for key in energy_keys():
        raw = json.loads((ROOT / "data" / "energy" / f"{key}.json").read_text())
        for entry in (*raw["pj_per_byte"], *raw["pj_per_flop"], "static_w", "idle_w"):
            assert raw["sources"].get(entry), f"{key}: {entry} has no source"


def test_published_figures_are_the_cited_numbers():
    # Horowitz 45 nm: fp32 add 0.9 + mult 3.7 pJ per FMA of 2 FLOP; fp16 0.4 + 1.1; 8 KB SRAM 10 pJ / 8 B
    # HBM2 / HBM3E 3.9 pJ/bit x 8 bits
    t = load_energy_table("a100-40gb")
    assert t.pj_per_flop["fp32_fma"] == pytest.approx((0.9 + 3.7) / 2)
    assert t.pj_per_flop["tensor_core"] == pytest.approx((0.4 + 1.1) / 2)
    assert t.pj_per_byte["SRAM"] == pytest.approx(10 / 8)
    assert t.pj_per_byte["HBM"] == pytest.approx(3.9 * 8)
    assert load_energy_table("h200", measured=False).pj_per_byte["HBM"] == pytest.approx(3.9 * 8)
    assert t.static_w is None and not t.measured


def test_naive_energy_by_hand_on_published_figures():
    n, d = 4096, 64
    # paper's naive (T = ∞), fp16: HBM (3Nd + 2N²) + (2N² + Nd) elements; SRAM per matmul: operands land
    # (QK: 2Nd writes; PV: N² + Nd writes) and 2·N²·d reads each; 4N²d FLOPs
    hbm = (4 * n * d + 4 * n * n) * 2
    sram = (4 * n * n * d + 3 * n * d + n * n) * 2
    flops = 4 * n * n * d
    e = energy(count("naive", Workload(n, d)), "a100-40gb")
    assert e.level_j["HBM"] == pytest.approx(hbm * 31.2e-12)
    assert e.level_j["SRAM"] == pytest.approx(sram * 1.25e-12)
    assert e.compute_j == pytest.approx(flops * 0.75e-12)
    assert e.static_j == 0 and e.total_j == pytest.approx(hbm * 31.2e-12 + sram * 1.25e-12 + flops * 0.75e-12)


def test_the_breakdown_is_per_traffic_row_and_sums_to_the_levels():
    r = count("fa2", Workload(2048, 64, heads=2), sram_bytes="192KiB")
    e = energy(r, "a100-40gb")
    rows = e.frame()
    assert set(rows["level"]) == {"HBM", "SRAM", "compute", "static"}
    q_hbm = rows[(rows.level == "HBM") & (rows.tensor == "Q")]["joules"].sum()
    assert q_hbm == pytest.approx(2048 * 64 * 2 * 2 * 31.2e-12)  # Q read once: N·d·2 B, 2 heads
    assert rows["joules"].sum() == pytest.approx(e.total_j)
    assert e.summary()["share"].sum() == pytest.approx(1.0)


def test_calibration_by_hand():
    rows = [
        {"bench": "idle", "repeat": "0", "watts": 90.0, "rate_per_s": None},
        {"bench": "static", "repeat": "0", "watts": 100.0, "rate_per_s": None},
        {"bench": "static", "repeat": "1", "watts": 110.0, "rate_per_s": None},
        {"bench": "hbm_copy", "repeat": "0", "watts": 500.0, "rate_per_s": 4e12},
        {"bench": "hbm_copy", "repeat": "1", "watts": 510.0, "rate_per_s": 4e12},
        {"bench": "fp32_fma", "repeat": "0", "watts": 300.0, "rate_per_s": 5e13},
        {"bench": "l2_read", "repeat": "0", "watts": 400.0, "rate_per_s": 3e12},
        {"bench": "tc_mma", "repeat": "0", "watts": 400.0, "rate_per_s": 5e14},
    ]
    out = calibrate(rows)
    assert out["static_w"]["mean"] == 105.0 and out["idle_w"]["mean"] == 90.0
    assert out["HBM"]["mean"] == pytest.approx(100.0)  # (500 − 100) / 4e12 and (510 − 110) / 4e12
    assert out["HBM"]["min"] == out["HBM"]["max"] == pytest.approx(100.0)
    assert out["fp32_fma"]["mean"] == pytest.approx(4.0)  # (300 − 100) / 5e13
    assert out["L2"]["mean"] == pytest.approx(100.0 - 2 * 4.0 / 4)  # less one FP32 instruction per 4 B
    assert out["tensor_core"]["mean"] == pytest.approx(0.6)  # (400 − 100) / 5e14
    with pytest.raises(ValueError, match="static"):
        calibrate(rows[:1])


def test_the_h200_table_is_the_committed_calibration():
    rows = rows_of(CALIBRATION)
    static = {r["repeat"]: float(r["watts"]) for r in rows if r["bench"] == "static"}
    copies = bench_figures(rows, "hbm_copy")
    t = load_energy_table("h200")
    assert t.measured
    assert t.pj_per_byte["HBM"] == pytest.approx(statistics.fmean(copies))
    assert t.static_w == pytest.approx(statistics.fmean(static.values()))
    assert t.spread["HBM"] == pytest.approx((min(copies), max(copies)))
    assert "energy_calibration_h200.csv" in t.sources["HBM"]


def test_static_power_time_and_dram_fraction_on_the_h200():
    t = load_energy_table("h200")
    w = Workload(4096, 64, heads=8, dtype="bf16")
    r = count("fa2_tc", w)
    hbm = r.hbm_bytes
    e = energy(r, t, time_s=2e-3, dram_fraction=0.25)
    assert e.static_j == pytest.approx(t.static_w * 2e-3)
    assert e.level_j["HBM"] == pytest.approx(hbm * 0.25 * t.pj_per_byte["HBM"] * 1e-12)
    assert e.level_j["L2"] == pytest.approx(hbm * 0.75 * t.pj_per_byte["L2"] * 1e-12)
    assert e.compute_j == pytest.approx(4 * 4096**2 * 64 * 8 * t.pj_per_flop["tensor_core"] * 1e-12)
    # default time: the roofline's; here FLOPs / 989.4 TFLOP/s against HBM bytes / 4.8 TB/s
    roof = max(4 * 4096**2 * 64 * 8 / 989.4e12, hbm / 4.8e12)
    assert energy(r, "h200").static_j == pytest.approx(t.static_w * roof)


def test_result_energy_hook_and_flop_unit():
    r = count("naive", Workload(1024, 64, dtype="fp32"))
    assert r.energy("a100-40gb").flop_unit == "fp32_fma"
    gemm = r.energy("h200", flop_unit="tensor_core_gemm", time_s=0)
    assert gemm.compute_j == pytest.approx(
        4 * 1024**2 * 64 * load_energy_table("h200").pj_per_flop["tensor_core_gemm"] * 1e-12
    )


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda r: energy(r, "nope"), "gpu must be one of"),
        (lambda r: energy(r, "t4"), "no energy per HBM byte"),
        (lambda r: energy(r, "h200", flop_unit="abacus"), "flop_unit must be one of"),
        (lambda r: energy(r, "h200", time_s=-1.0), "time_s"),
        (lambda r: energy(r, "h200", dram_fraction=2), "dram_fraction"),
    ],
)
def test_bad_input_is_refused_by_name(call, message):
    with pytest.raises(ValueError, match=message):
        call(count("naive", Workload(256, 64)))


def cli(*args):
    return subprocess.run(
        [sys.executable, "-m", "simlib", "energy", *args], capture_output=True, text=True, cwd=ROOT
    )


def test_cli_json_by_hand():
    out = cli("--algorithm", "naive", "--seq-len", "1024", "--head-dim", "64", "--gpu", "a100-40gb", "--json")
    assert out.returncode == 0, out.stderr
    row = json.loads(out.stdout)
    n, d = 1024, 64
    assert row["hbm_j"] == pytest.approx((4 * n * d + 4 * n * n) * 2 * 31.2e-12)
    assert row["compute_j"] == pytest.approx(4 * n * n * d * 0.75e-12)
    assert row["static_j"] == 0


def test_cli_text_names_every_term():
    out = cli(
        "--algorithm",
        "fa2",
        "--seq-len",
        "1024",
        "--head-dim",
        "64",
        "--gpu",
        "h200",
        "--heads",
        "4",
        "--model",
        "logical",
    )
    assert out.returncode == 0, out.stderr
    for word in ("HBM", "SRAM", "compute", "static", "total", "measured", "leaves out"):
        assert word in out.stdout


@pytest.mark.parametrize(
    "args, name",
    [
        (("--algorithm", "naive", "--seq-len", "1024", "--head-dim", "64"), "--gpu"),
        (("--algorithm", "naive", "--seq-len", "1024", "--head-dim", "64", "--gpu", "t4"), "HBM"),
        (("--algorithm", "naive", "--seq-len", "0", "--head-dim", "64", "--gpu", "h200"), "--seq-len"),
        (
            (
                "--algorithm",
                "naive",
                "--seq-len",
                "64",
                "--head-dim",
                "64",
                "--gpu",
                "h200",
                "--time-s",
                "-2",
            ),
            "--time-s",
        ),
    ],
)
def test_cli_bad_input_one_line_exit_2(args, name):
    out = cli(*args)
    assert out.returncode == 2 and out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and name in out.stderr


def test_every_measured_kernel_gets_a_prediction():
    from evidence.energy_check import model_vs_measured

    ok = [r for r in rows_of(ATTENTION) if r["status"] == "ok"]
    frame = model_vs_measured()
    one_launch = {"naive_tc_scores", "naive_tc_softmax", "naive_tc_pv"}
    logical = frame[frame.model == "logical"]
    assert len(logical) == len([r for r in ok if r["variant"] not in one_launch])
    assert {"naive_tc", "fa2_tc", *one_launch} <= set(frame.variant)
    first = logical.iloc[0]
    r0 = ok[0]
    assert first["measured_j"] == pytest.approx(float(r0["joules_per_call"]))
    static = load_energy_table("h200").static_w
    assert first["pred_static_j"] == pytest.approx(static * float(r0["ms_per_call"]) / 1e3)
    assert (frame["ratio_total"] > 0).all()
    assert set(frame[frame.model == "physical"]["variant"]) == {
        "numba_naive",
        "numba_tiled",
        "naive_tc",
        "fa2_tc",
        *one_launch,
    }
    # the counters run profiled every call of the energy run (N = 16384 in its own files)
    assert len(frame[frame.model == "counters"]) == len(ok)


def test_sixteen_byte_shared_loads_reprice_only_the_sram_term():
    """The LDS.128 figure by hand from the calibration (power − the repeat's static, over the byte
    rate, less one FADD = 2 FLOP at that run's FFMA figure per 4 B); a "16-byte SRAM" row is its
    kernel's row with the SRAM joules scaled by that figure over the table's SRAM figure."""
    from evidence.energy_check import model_vs_measured, sixteen_byte_sram

    rows = rows_of(CALIBRATION)
    fadd = 2 * statistics.fmean(bench_figures(rows, "fp32_fma")) / 4
    v4 = statistics.fmean(bench_figures(rows, "smem_read_v4")) - fadd
    assert sixteen_byte_sram() == pytest.approx(v4)
    assert v4 < 0.5 * (statistics.fmean(bench_figures(rows, "smem_read")) - fadd)  # fewer instructions
    frame = model_vs_measured()
    sram = load_energy_table("h200").pj_per_byte["SRAM"]
    for (variant, _, _), group in frame[frame.model.str.startswith("logical")].groupby(
        ["variant", "pass", "seq_len"]
    ):
        by = {m: r for m, r in zip(group.model, group.itertuples())}
        if "logical, 16-byte SRAM" not in by:
            assert variant in ("numba_naive", "cupy_naive", "torch_math", "torch_efficient")
            continue
        a, b = by["logical"], by["logical, 16-byte SRAM"]
        assert b.pred_sram_j == pytest.approx(a.pred_sram_j * v4 / sram)
        assert b.pred_hbm_j == a.pred_hbm_j and b.pred_compute_j == a.pred_compute_j


def test_fp32_gemm_figure_and_sgemm_pricing_by_hand():
    """fp32_gemm is the TF32-off 8192³ SGEMM's joules per FLOP above static; torch math's logical
    prediction charges its SGEMM FLOPs (4·N²·d·B·H, fp32 upcast) at it."""
    from evidence.energy_check import model_vs_measured

    gemm = statistics.fmean(bench_figures(rows_of(CALIBRATION), "fp32_matmul"))
    t = load_energy_table("h200")
    assert t.pj_per_flop["fp32_gemm"] == pytest.approx(gemm)
    assert t.pj_per_flop["fp32_gemm"] > 1.5 * t.pj_per_flop["fp32_fma"]  # operand traffic is not free
    frame = model_vs_measured()
    r = frame[(frame.variant == "torch_math") & (frame.dtype == "fp32") & (frame["pass"] == "fwd")]
    r = r[(r.model == "logical") & (r.seq_len == 4096)].iloc[0]
    n, d, bh = 4096, 64, 32
    assert r.pred_compute_j == pytest.approx(4 * n * n * d * bh * gemm * 1e-12, rel=1e-3)


def test_counters_model_by_hand():
    """torch math fp32 forward at N = 4096 (B·H = 32), from the counters CSV read here: DRAM bytes at
    HBM, the SMs' L2 sectors × 32 less DRAM at L2, shared instructions and wavefronts at the split
    solved from LDS.32 = a + 128 b and LDS.128 = a + 512 b (per instruction), FFMA thread instructions
    × 2 at fp32_fma, and for "counters + issue" the other warp instructions at 64 FLOPs of fp32_fma."""
    from evidence.energy_check import model_vs_measured

    c = next(
        r
        for r in rows_of(COUNTERS)
        if (r["variant"], r["dtype"], r["pass"], r["seq_len"], r["batch"])
        == ("torch_math", "fp32", "fwd", "4096", "2")
    )

    def v(*names):
        return sum(float(c[n] or 0) for n in names)

    t = load_energy_table("h200")
    lds32, lds128 = (
        t.pj_per_byte["SRAM"],
        statistics.fmean(bench_figures(rows_of(CALIBRATION), "smem_read_v4")),
    )
    lds128 -= 2 * statistics.fmean(bench_figures(rows_of(CALIBRATION), "fp32_fma")) / 4
    # solve [[1, 128], [1, 512]] (a, b) = (128 lds32, 512 lds128)
    b = (512 * lds128 - 128 * lds32) / (512 - 128)
    a = 128 * lds32 - 128 * b
    dram = v("dram__bytes_read.sum", "dram__bytes_write.sum")
    l2 = 32 * v("lts__t_sectors_srcunit_tex_op_read.sum", "lts__t_sectors_srcunit_tex_op_write.sum") - dram
    inst = v(
        "smsp__sass_inst_executed_op_shared_ld.sum",
        "smsp__sass_inst_executed_op_shared_st.sum",
        "smsp__sass_inst_executed_op_ldsm.sum",
    )
    ffma = v("smsp__sass_thread_inst_executed_op_ffma_pred_on.sum")
    other = (
        v("smsp__inst_executed.sum")
        - inst
        - v(
            "smsp__sass_inst_executed_op_global_ld.sum",
            "smsp__sass_inst_executed_op_global_st.sum",
            "smsp__sass_inst_executed_op_ldgsts.sum",
        )
        - ffma / 32
    )
    pj = (
        dram * t.pj_per_byte["HBM"]
        + l2 * t.pj_per_byte["L2"]
        + inst * a
        + 128 * v("l1tex__data_pipe_lsu_wavefronts_mem_shared.sum") * b
        + 2 * ffma * t.pj_per_flop["fp32_fma"]
    )
    m = next(
        r
        for r in rows_of(ATTENTION)
        if (r["variant"], r["dtype"], r["pass"], r["seq_len"]) == ("torch_math", "fp32", "fwd", "4096")
    )
    static = t.static_w * float(m["ms_per_call"]) / 1e3
    frame = model_vs_measured()
    pick = frame[(frame.variant == "torch_math") & (frame.dtype == "fp32") & (frame["pass"] == "fwd")]
    pick = pick[pick.seq_len == 4096].set_index("model")
    assert pick.loc["counters", "pred_total_j"] == pytest.approx(pj * 1e-12 + static, rel=1e-9)
    issue = other * 64 * t.pj_per_flop["fp32_fma"] * 1e-12
    assert pick.loc["counters + issue", "pred_total_j"] == pytest.approx(
        pj * 1e-12 + static + issue, rel=1e-9
    )
    assert pick.loc["counters", "ratio_total"] == pytest.approx(
        (pj * 1e-12 + static) / float(m["joules_per_call"])
    )


def test_naive_tc_launches_sum_to_the_call_and_softmax_carries_the_gap():
    """Measured alone, naive_tc's three launches add up to the whole call's joules (within 3 %, an
    independent check of the one-launch measurement); the counters model's shortfall is in softmax,
    whose residual per unpriced warp instruction is of the order of one FFMA warp instruction."""
    from evidence.energy_check import naive_tc_by_launch

    measured = {(r["variant"], int(r["seq_len"])): float(r["joules_per_call"]) for r in rows_of(ATTENTION)}
    for n in (1024, 4096, 16384):
        parts = sum(measured[(f"naive_tc_{x}", n)] for x in ("scores", "softmax", "pv"))
        assert parts == pytest.approx(measured[("naive_tc", n)], rel=0.03)
    t = naive_tc_by_launch().set_index(["seq_len", "launch"])
    assert list(t.index.get_level_values(1)[:3]) == ["pv", "scores", "softmax"]
    for n in (1024, 4096, 16384):
        assert t.loc[(n, "softmax"), "ratio_counters"] < 0.7 < t.loc[(n, "scores"), "ratio_counters"]
        row = t.loc[(n, "softmax")]
        assert row.residual_j == pytest.approx(row.measured_j - row.counters_j)
        assert 0.5 < row.residual_pj_per_instruction / row.ffma_warp_instruction_pj < 2


def test_claim_numbers_by_hand():
    from evidence.energy_claim import attention_calls, rest_of_step_flops, training_step

    assert rest_of_step_flops() == 6 * 1024 * (24 * 12 * 1024**2 + 1024 * 50257)
    s = training_step(0.3, 0.1, 2e-12)
    rest = rest_of_step_flops() * 2e-12
    assert s["saving"] == pytest.approx(24 * 0.2 / (24 * 0.3 + rest))
    # at the rest multiple for 40 %, the saving is 40 %
    m = s["rest_multiple_for_40pct"]
    assert 24 * 0.2 / (24 * 0.3 + m * rest) == pytest.approx(0.40)
    rows = {
        (r["variant"], r["dtype"], r["pass"], r["seq_len"]): r
        for r in rows_of(ATTENTION)
        if r["status"] == "ok"
    }
    calls = attention_calls(upcast=True)
    at = calls[(calls.dtype == "bf16") & (calls["pass"] == "fwd") & (calls.seq_len == 4096)]
    one = at[at.upcast].iloc[0]  # SDPA math bf16: fp32 inside, labelled, never the 16-bit baseline
    std = float(rows[("torch_math", "bf16", "fwd", "4096")]["joules_per_call"])
    fla = float(rows[("torch_flash", "bf16", "fwd", "4096")]["joules_per_call"])
    assert one["flash_over_standard"] == pytest.approx(fla / std)
    eager16 = {
        (r["variant"], r["dtype"], r["pass"], r["seq_len"]): float(r["joules_per_call"])
        for r in rows_of(ROOT / "data" / "measurements" / "current" / "eager16_energy_h200.csv")
        if r["status"] == "ok" and r["variant"] != "idle"
    }
    for std_name in ("eager", "eager_hf", "attention_ref"):
        row = at[at.standard == std_name].iloc[0]
        assert not row.upcast and row.flash == "torch_flash"
        assert row.saving == pytest.approx(
            1 - eager16[("torch_flash", "bf16", "fwd", "4096")] / eager16[(std_name, "bf16", "fwd", "4096")]
        )
    assert "torch_math" not in set(attention_calls().query("dtype != 'fp32'").standard)


def test_claim_verdict_is_stated_with_its_numbers():
    from evidence.energy_claim import energy_claim_verdict

    v = energy_claim_verdict()
    assert v["cases"] and "%" in v["verdict"]
    assert {c["dtype"] for c in v["cases"]} <= {"fp16", "bf16"} and [c["dtype"] for c in v["fp32_cases"]] == [
        "fp32"
    ]
    assert not any(c["upcast"] for c in v["cases"]) and all(c["upcast"] for c in v["upcast_cases"])
    for c in [*v["cases"], *v["fp32_cases"]]:
        assert 0 < c["saving"] < 1 and 0 < c["attention_share_standard"] < 1


def test_the_note_shows_what_the_data_gives():
    from evidence.energy_report import report_markdown

    text = (ROOT / "docs" / "ENERGY.md").read_text()
    start = text.index("<!-- generated: python -m evidence.energy_report -->\n") + len(
        "<!-- generated: python -m evidence.energy_report -->\n"
    )
    assert text[start : text.index("<!-- end generated -->")] == report_markdown()
