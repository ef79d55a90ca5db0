"""The lecture helpers (course: charts, claims, readers) and the stored notebooks.

Claim numbers are checked against hand derivations written out here, independent of simlib's code:
the paper's element counts (naive reads 3Nd + 2N², writes 2N² + Nd; FA2 reads Nd + Tr·2Nd, writes
Nd + N fp32 stats) and plain arithmetic on N×N matrices.
"""

import doctest
import json
import math
import re
import subprocess
from pathlib import Path

import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from course import charts
from evidence import claims, intensity, numbers, paper, readers, verdicts  # noqa: E402
from measurements import read as measurement_readers
from measurements import schemas

ROOT = Path(__file__).resolve().parent.parent
NOTEBOOKS = ROOT / "notebooks"
MiB, GiB = 2**20, 2**30


# ---------------------------------------------------------------------------------------------
# charts
# ---------------------------------------------------------------------------------------------


def test_doctests():
    for module in (charts, claims, intensity, paper, readers, verdicts):
        failures, _ = doctest.testmod(module)
        assert failures == 0, module.__name__


@settings(max_examples=50, deadline=None)
@given(exponent=st.floats(-3, 3), coefficient=st.floats(1e-3, 1e3))
def test_fit_recovers_a_power_law(exponent, coefficient):
    x = np.array([16.0, 64.0, 256.0, 1024.0])
    slope, intercept = numbers.fit_loglog_slope(x, coefficient * x**exponent)
    assert slope == pytest.approx(exponent, abs=1e-9)
    assert intercept == pytest.approx(math.log10(coefficient), abs=1e-9)


def test_fit_drops_non_positive_points_and_needs_two():
    assert numbers.fit_loglog_slope([0, 1, 2, 4], [5, 1, 4, 16])[0] == pytest.approx(2)
    with pytest.raises(ValueError):
        numbers.fit_loglog_slope([1, 0], [1, 1])
    with pytest.raises(ValueError):
        numbers.fit_loglog_slope([2, 2], [1, 3])


@pytest.mark.parametrize(
    "n,binary,text",
    [
        (2 * 4096**2, True, "32 MiB"),
        (132 * GiB, True, "132 GiB"),
        (512, True, "512 B"),
        (136_314_880, False, "136 MB"),
        (1.5e12, False, "1.5 TB"),
        (2048, False, "2.05 kB"),
    ],
)
def test_fmt_bytes(n, binary, text):
    assert numbers.fmt_bytes(n, binary=binary) == text


@pytest.mark.parametrize(
    "n,text", [(256, "256"), (1024, "1K"), (65536, "64K"), (1000, "1000"), (3072, "3K"), (2**20, "1M")]
)
def test_tokens_label(n, text):
    assert numbers.tokens_label(n) == text


def test_fmt_seconds_and_count():
    assert numbers.fmt_seconds(28.4e-6) == "28.4 µs"
    assert numbers.fmt_seconds(0.25) == "250 ms"
    assert numbers.fmt_count(16_777_216) == "16.8 M"


def test_plot_loglog_prints_the_slope_and_labels_axes():
    fig, ax = plt.subplots()
    n = np.array([256, 512, 1024, 2048])
    fit = charts.plot_loglog(ax, n, 4.0 * n**2, "quadratic", fit_from=512)
    charts.tokens_axis(ax, n)
    charts.bytes_axis(ax, label="traffic")
    assert fit.slope == pytest.approx(2.0)
    assert "slope 2.00" in ax.get_lines()[0].get_label()
    assert "fit 512–2K" in ax.get_lines()[0].get_label()
    assert ax.get_xscale() == "log" and ax.get_yscale() == "log"
    assert "tokens" in ax.get_xlabel() and "bytes" in ax.get_ylabel()
    fig.canvas.draw()
    labels = [t.get_text() for t in ax.get_yticklabels() if t.get_text()]
    assert labels and all("B" in t for t in labels)  # every tick label has a byte unit
    plt.close(fig)


def test_flat_line_slope_is_printed_without_minus_zero():
    fig, ax = plt.subplots()
    fit = charts.plot_loglog(ax, [1, 2, 4], [3.0, 3.0, 3.0 * (1 - 1e-12)], "flat")
    assert fit.slope == 0.0 and "-0.00" not in ax.get_lines()[0].get_label()
    plt.close(fig)


def test_roofline_curve_and_ridge():
    from simlib import load_preset

    hw = load_preset("a100-40gb")
    peak, bw = hw.peak_flops["fp16"], hw.level("HBM").bandwidth_bytes_per_s
    assert charts.roofline_curve(peak, bw, 10.0) == pytest.approx(10 * bw)
    assert charts.roofline_curve(peak, bw, 1e4) == pytest.approx(peak)
    fig, ax = plt.subplots()
    assert charts.plot_roofline(ax, hw, points=[("x", 31.5, "red")]) == pytest.approx(peak / bw)
    plt.close(fig)


# ---------------------------------------------------------------------------------------------
# claims, against hand derivations
# ---------------------------------------------------------------------------------------------


def naive_elements(n, d):
    """Paper's Algorithm 0: reads 3Nd + 2N², writes 2N² + Nd."""
    return 3 * n * d + 2 * n * n + 2 * n * n + n * d


def test_claim_a_scores():
    d = claims.claim_a(seq_lens=(4096, 4000)).set_index("N (tokens)")["scores per head"]
    assert d[4096] == 16_777_216 == 2**24
    assert d[4000] == 16_000_000


def test_claim_b_quadruples():
    d = claims.claim_b(seq_lens=(1024, 4096))
    assert (d["scores ×"] == 4).all() and (d["FLOPs ×"] == 4).all()
    for row, n in zip(d.itertuples(), (1024, 4096)):
        assert row[4] == pytest.approx(naive_elements(2 * n, 64) / naive_elements(n, 64))


def test_claim_c_sizes():
    assert claims.nxn_bytes(4096) == 32 * MiB
    assert claims.nxn_bytes(8192) == 128 * MiB
    assert claims.nxn_bytes(4096, dtype="fp32") == 64 * MiB
    # 23170² · 2 B = 1,073,697,800 < 2³⁰ = 1,073,741,824 ≤ 23171² · 2 B = 1,073,790,482
    assert claims.min_seq_len_for(GiB) == 23171
    c = claims.claim_c(seq_lens=(4096,), batches=(8,))
    llama = c[c.model == claims.LLAMA].iloc[0]
    assert llama["one layer × batch (GiB)"] == 32 * 8 * 32 * MiB / GiB == 8
    assert llama["all layers × batch (GiB)"] == 8 * 32  # 8 GiB per layer × 32 layers


def test_model_configs_come_from_data_where_possible():
    cfg = claims.model_configs()
    raw = json.loads((ROOT / "data" / "models" / f"{claims.LLAMA_KEY}.json").read_text())
    assert cfg[claims.LLAMA]["layers"] == raw["num_hidden_layers"]
    assert cfg[claims.LLAMA]["heads"] == raw["num_attention_heads"]
    assert cfg[claims.GPT2] | {} == claims.GPT2_CONFIG


def test_claim_d_slopes():
    s = claims.slopes_d(claims.claim_d(seq_lens=(4096, 8192, 16384))).set_index("algorithm")
    assert s.loc["naive", "extra-memory slope"] == pytest.approx(2)
    assert s.loc["fa2", "extra-memory slope"] == pytest.approx(1)
    # FA2 traffic (H200 tiles Br = 64): Nd + Tr·2Nd + Nd elements with Tr = N/64 → ~N²: slope ≈ 2
    assert s.loc["fa2", "traffic slope"] == pytest.approx(2, abs=0.02)
    assert s.loc["naive", "traffic slope"] == pytest.approx(2, abs=0.02)


def test_model_speedups_match_the_hand_counts():
    from simlib import Workload, count, load_preset

    m = claims.model_speedups((4096,), gpu="h200").iloc[0]
    n, d = 4096, 64
    # the tiles are fa2's default (whichever rule chose them); the traffic for them is the paper's count
    br = count("fa2", Workload(n, d), sram_bytes=load_preset("h200").sram_bytes).block_rows
    tr = math.ceil(n / br)
    naive = naive_elements(n, d) * 2
    fa2 = (n * d + tr * 2 * n * d + n * d) * 2 + n * 4  # Br = 64: 68,173,824 B; Br = 128: 34,619,392 B
    assert m["naive HBM bytes / fa2"] == pytest.approx(naive / fa2)
    # HBM roofline: both memory bound at 4.8 TB/s while 4N²d FLOPs / bytes < the ridge 989.4e12 / 4.8e12 = 206
    flops = 4 * n * n * d
    assert flops / fa2 < 989.4e12 / 4.8e12 and flops / naive < 989.4e12 / 4.8e12
    assert m["HBM-roofline speed-up fa2"] == pytest.approx(naive / fa2)
    assert m["naive − fa2 HBM time per head (µs)"] == pytest.approx((naive - fa2) / 4.8e12 * 1e6)


def test_claim_f_footprint():
    f = claims.claim_f(seq_lens=(2048,)).iloc[0]
    n, d = 2048, 64
    qkvo = 4 * n * d * 2
    assert f["FlashAttention-2 (bytes)"] == qkvo + 4 * n
    assert f["ratio, P only"] == pytest.approx((qkvo + 2 * n * n) / (qkvo + 4 * n))
    assert f["ratio, S and P"] == pytest.approx((qkvo + 4 * n * n) / (qkvo + 4 * n))
    assert f["ratio, P only"] == pytest.approx(8.93, abs=0.01)


def test_claim_g_oom():
    g = claims.claim_g().set_index(["model", "mode", "batch"])
    assert g.loc[(claims.LLAMA, "training", 1), "N×N matrices (GiB)"] == 33 * 32 * 128 * MiB / GiB == 132
    assert g.loc[(claims.LLAMA, "inference", 1), "N×N matrices (GiB)"] == 2 * 32 * 128 * MiB / GiB == 8
    assert g.loc[(claims.GPT2, "training", 1), "N×N matrices (GiB)"] == 25 * 16 * 128 * MiB / GiB == 50
    assert (g["HBM (GiB)"] == 80).all()
    assert not g.loc[(claims.GPT2, "training", 1), "N×N alone exceed HBM"]
    assert g.loc[(claims.GPT2, "training", 2), "N×N alone exceed HBM"]
    assert g.loc[(claims.LLAMA, "training", 1), "N×N alone exceed HBM"]


# ---------------------------------------------------------------------------------------------
# measurements: one fixed schema per writer, loud when it differs
# ---------------------------------------------------------------------------------------------

BENCH_HEADER = "kernel,batch,heads,seq_len,head_dim,params,metric,value,unit,note\n"


def write(tmp_path, text, name="bench.csv"):
    path = tmp_path / name
    path.write_text(text)
    return path


def test_bench_reader_keeps_the_median_of_the_fastest_params(tmp_path):
    # the layout of gpu_kernels' bench CSV: a params column, percentiles, a status row
    path = write(
        tmp_path,
        BENCH_HEADER + "cupy_naive,1,16,4096,64,tf32=False,time_ms_median,7.0,ms,\n"
        "cupy_naive,1,16,4096,64,tf32=False,time_ms_p10,6.0,ms,\n"
        "naive,1,16,4096,64,matmul_tile=16,time_ms_median,36.0,ms,\n"
        "naive,1,16,32768,64,matmul_tile=16,status,skipped,,too big\n"
        "tiled,1,16,4096,64,block_rows=48;block_cols=48,time_ms_median,12.0,ms,\n"
        "tiled,1,16,4096,64,block_rows=24;block_cols=24,time_ms_median,18.0,ms,\n"
        "tiled,1,16,4096,64,block_rows=48;block_cols=48,tflops,1.2,TFLOP/s,\n"
        "naive,1,16,256,64,matmul_tile=16,time_ms_median,0.30,ms,\n"
        "tiled,1,16,256,64,block_rows=48;block_cols=48,time_ms_median,0.25,ms,\n",
    )
    times = readers.bench_times(path)
    assert len(times) == 5
    tiled = times[(times.kernel == "tiled") & (times.seq_len == 4096)].iloc[0]
    assert tiled.time_ms == 12.0 and tiled.params == "block_rows=48;block_cols=48"  # fastest tile kept
    s = claims.teaching_speedups(path).set_index("seq_len")["speed-up"]
    assert s[4096] == pytest.approx(36 / 12) and s[256] == pytest.approx(0.30 / 0.25)


def test_a_file_without_its_writers_columns_fails_loudly_naming_file_and_column(tmp_path):
    path = write(tmp_path, "kernel,N,d,time_ms\nnaive,8192,64,12\n")
    with pytest.raises(
        measurement_readers.MeasurementFileError,
        match=r"bench.csv: missing column\(s\) batch, heads, seq_len",
    ):
        readers.bench_times(path)
    path = write(
        tmp_path, "kernel,batch,heads,seq_len,head_dim,params,metric,value,unit,note\n", name="cmp.csv"
    )
    with pytest.raises(measurement_readers.MeasurementFileError, match="cmp.csv: missing column.s. variant"):
        readers.compare_times(path)


def test_a_non_numeric_time_fails_loudly(tmp_path):
    path = write(tmp_path, BENCH_HEADER + "naive,1,16,4096,64,,time_ms_median,fast,ms,\n")
    with pytest.raises(ValueError):
        readers.bench_times(path)


def test_provenance_sidecar(tmp_path):
    path = write(tmp_path, "x\n")
    with pytest.raises(FileNotFoundError, match="bench.csv: no provenance sidecar"):
        measurement_readers.read_provenance(path)
    (tmp_path / "bench.provenance.json").write_text('{"gpu_name": "X"}')
    assert measurement_readers.read_provenance(path) == {"gpu_name": "X"}


def test_committed_measurements_read_with_their_schemas():
    assert set(readers.bench_times().kernel) == {"cupy_naive", "naive", "tiled"}
    assert {"numba_fast", "torch_math", "torch_efficient", "cupy_naive"} <= set(
        readers.compare_times().kernel
    )


# ---------------------------------------------------------------------------------------------
# the stored notebooks
# ---------------------------------------------------------------------------------------------

LECTURES = sorted(NOTEBOOKS.glob("[0-9]*.py"))


def test_lectures_are_numbered_scripts_and_no_notebook_is_tracked():
    assert LECTURES, "no lectures"
    for path in LECTURES:
        assert re.match(r"\d\d[a-z]?_", path.stem), path.name  # 04, 04b (a second part), 05b_appendix
    tracked = subprocess.run(
        ["git", "ls-files", "notebooks"], cwd=NOTEBOOKS.parent, capture_output=True, text=True, check=True
    ).stdout.split()
    assert not [name for name in tracked if name.endswith(".ipynb")], "a .ipynb is tracked: see jupytext.toml"


def _write_compare(tmp_path, rows):
    path = tmp_path / "compare.csv"
    lines = ["variant,batch,heads,seq_len,head_dim,params,metric,value,unit,note"]
    lines += [f"{v},1,16,{n},{d},,ms,{ms},ms (median)," for v, n, d, ms in rows]
    lines += [f"{v},1,16,{n},{d},,status,ok,," for v, n, d, _ in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_optimised_speedups_pair_each_standard_with_its_flash_kernel(tmp_path):
    path = _write_compare(
        tmp_path,
        [
            ("cupy_naive", 4096, 64, 9.0),
            ("numba_fast", 4096, 64, 3.0),
            ("torch_math", 4096, 64, 4.0),
            ("torch_efficient", 4096, 64, 2.5),
            ("numba_naive", 4096, 64, 40.0),
        ],
    )
    s = claims.optimised_speedups(path).set_index("baseline")
    assert s.loc["cupy_naive", "speed-up"] == pytest.approx(3.0)  # 9 / 3
    assert s.loc["torch_math", "speed-up"] == pytest.approx(1.6)  # 4 / 2.5
    assert len(s) == 2


# ---------------------------------------------------------------------------------------------
# lecture 5's readers and chart (profiles, ceilings, the two side-by-side runs)
# ---------------------------------------------------------------------------------------------

PROFILE_HEADER = "kernel,launch,batch,heads,seq_len,head_dim,params,metric,value,unit,source,note\n"


def _profile(tmp_path):
    """One fp32 tiled launch (and its total) at N = 64, d = 16: 2 ncu metrics, the counters and simlib."""
    rows = [
        "tiled,fa2,1,1,64,16,,dram__bytes_read.sum,12288,byte,ncu,",
        "tiled,fa2,1,1,64,16,,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,1024,sector,ncu,",
        "tiled,total,1,1,64,16,,dram__bytes_read.sum,12288,byte,ncu,",
    ]
    for counter, counted, model in (
        ("hbm_read_bytes", 32768, 32768),
        ("hbm_write_bytes", 4096, 4096),
        ("sram_read_bytes", 9000, 8999),
        ("sram_write_bytes", 100, 100),
    ):
        rows.append(f"tiled,total,1,1,64,16,,counted_{counter},{counted},byte,kernel counters,")
        rows.append(f"tiled,total,1,1,64,16,,simlib_{counter},{model},byte,simlib,")
    path = write(tmp_path, PROFILE_HEADER + "\n".join(rows) + "\n", name="profile.csv")
    mvn = write(
        tmp_path,
        "kernel,launch,batch,heads,seq_len,head_dim,params,metric,model,ncu,ratio,within_5pct,target,cause\n"
        "tiled,fa2,1,1,64,16,,dram__bytes_read.sum,12000,12288,0.9765625,True,True,\n",
        name="mvn.csv",
    )
    return readers.read_profile(path), readers.read_model_vs_ncu(mvn)


def test_counter_differences_and_bytes_by_level(tmp_path):
    profile, mvn = _profile(tmp_path)
    diff = readers.counter_differences(profile).set_index("counter")["difference (B)"]
    assert diff.to_dict() == {
        "hbm_read_bytes": 0,
        "hbm_write_bytes": 0,
        "sram_read_bytes": 1,
        "sram_write_bytes": 0,
    }
    level = readers.bytes_by_level(profile, mvn).iloc[0]
    assert level["logical HBM reads"] == 32768
    assert level["L1 sectors × 32 (ncu)"] == 1024 * 32  # the total row is not added twice
    assert level["DRAM reads (ncu)"] == 12288 and level["DRAM reads (model)"] == 12000


def test_read_ceilings_and_measured_hardware(tmp_path):
    from simlib import load_preset

    path = tmp_path / "ceilings.json"
    path.write_text(
        json.dumps(
            {
                "mma_bf16": {"tflops": 600.0},
                "mma_fp16": {"tflops": 590.0},
                "ffma_fp32": {"tflops": 57.0},
                "copy": {"gbps": 4200.0},
            }
        )
    )
    ceilings = readers.read_ceilings(path)
    assert ceilings == {"bf16": 600e12, "fp16": 590e12, "fp32": 57e12, "copy_bytes_per_s": 4.2e12}
    h200 = load_preset("h200")
    measured = readers.measured_hardware(h200, ceilings)
    assert measured.peak_flops["bf16"] == 600e12 and measured.level("HBM").bandwidth_bytes_per_s == 4.2e12
    assert measured.level("L2") == h200.level("L2") and h200.peak_flops["bf16"] == 989.4e12  # a copy


TC_HEADER = "kernel,config,dtype,batch,heads,seq_len,head_dim,causal,median_ms,tflops,note\n"


def test_tc_times_keeps_fa2_tc_default_and_lists_what_was_not_timed(tmp_path):
    path = write(
        tmp_path,
        TC_HEADER + "fa2_tc,w4_bc64 (default),bf16,16,16,1024,64,False,2.0,,\n"
        "fa2_tc,w4_bc128,bf16,16,16,1024,64,False,1.0,,\n"
        "naive_tc,w4_bc64,bf16,16,16,1024,64,False,8.0,,\n"
        "cupy_naive,cuBLAS bf16,bf16,16,16,1024,64,False,,,not timed: TypeError\n"
        "*,,bf16,16,16,1024,64,True,,,not run: past --budget-s 70\n",
        name="tc.csv",
    )
    times = readers.tc_times(path).set_index("kernel")
    assert sorted(times.index) == ["fa2_tc", "naive_tc"] and times.loc["fa2_tc", "time_ms"] == 2.0
    untimed = readers.tc_untimed(path).set_index("kernel")
    assert untimed.loc["cupy_naive", "shapes"] == 1 and "budget" in untimed.loc["*", "note"]
    # the causal run's file replaces the main file's causal placeholders
    causal = write(
        tmp_path,
        TC_HEADER + "fa2_tc,w4_bc64 (default),bf16,16,16,1024,64,True,1.1,,\n"
        "naive_tc,w4_bc64,bf16,16,16,1024,64,True,10.0,,\n",
        name="tc_causal.csv",
    )
    both = readers.tc_times(path, causal_path=causal)
    assert len(both) == 4 and both.causal.sum() == 2
    assert "*" not in set(readers.tc_untimed(path, causal_path=causal).kernel)
    ratios = readers.causal_ratios(both).set_index("kernel")["causal ÷ non-causal"]
    assert ratios["fa2_tc"] == pytest.approx(1.1 / 2.0) and ratios["naive_tc"] == pytest.approx(10.0 / 8.0)
    table = readers.speedup_table(
        readers.tc_times(path), [("naive_tc", "fa2_tc")], "bf16", charts.VARIANT_LABELS
    )
    assert table.loc["numba fa2_tc (ours: FA2) over numba naive_tc (ours) (bf16)", (64, 1024)] == 4.0  # 8 / 2


def test_tc_times_reads_the_runs_ratio_to_torch_flash_where_it_wrote_one(tmp_path):
    header = TC_HEADER.replace(",note", ",ratio_to_torch_flash,note")
    path = write(
        tmp_path,
        header + "fa3_tc,g2 (default),bf16,4,16,4096,64,False,0.75,,0.750,\n"
        "torch_flash,,bf16,4,16,4096,64,False,1.0,,1.000,\n",
        name="every.csv",
    )
    ratio = readers.tc_times(path).set_index("kernel")["ratio_to_torch_flash"]
    assert ratio["fa3_tc"] == 0.75 and ratio["torch_flash"] == 1.0
    assert "ratio_to_torch_flash" not in readers.tc_times(
        write(tmp_path, TC_HEADER + "torch_flash,,bf16,4,16,4096,64,False,1.0,,\n", name="old.csv")
    )
    # the committed every-kernel run: each ratio is its median over torch flash's at the same shape
    every = readers.tc_times(readers.lookup("tc_side_by_side_h200_every.csv"))
    key = ["causal", "head_dim", "seq_len"]
    flash = every[every.kernel == "torch_flash"].set_index(key)["time_ms"]
    joined = every.join(flash.rename("flash_ms"), on=key)
    assert np.allclose(joined["ratio_to_torch_flash"], joined["time_ms"] / joined["flash_ms"], atol=6e-4)


def test_with_tflops_is_four_n_squared_d_per_head_over_time():
    import pandas as pd

    times = pd.DataFrame({"batch": [2], "heads": [3], "seq_len": [1024], "head_dim": [64], "time_ms": [1.5]})
    expected = 4 * 1024 * 1024 * 64 * 6 / 1.5e-3 / 1e12  # QKᵀ and PV, 2·N²·d each, B·H = 6
    assert readers.with_tflops(times)["tflops"].item() == pytest.approx(expected)


def test_roofline_speedups_equal_the_byte_ratio_when_both_are_memory_bound():
    import dataclasses

    import pandas as pd

    from simlib import load_preset

    n, d = 4096, 64
    fast_compute = dataclasses.replace(load_preset("h200"), peak_flops={"bf16": 1e30})
    times = pd.DataFrame(
        {
            "kernel": ["naive_tc", "fa2_tc"],
            "dtype": "bf16",
            "batch": 1,
            "heads": 1,
            "seq_len": n,
            "head_dim": d,
        }
        | {"time_ms": [9.0, 2.0]}
    )
    version3 = {
        "warp_rows": 16,
        "q_reload": False,
    }  # 4 warps x 16 rows: Br = 64, as the side by side timed it
    row = readers.roofline_speedups(times, "naive_tc", "fa2_tc", fast_compute, version3).iloc[0]
    tiles = n // 64  # both kernels' 64-wide tiles (Br = Bc = 64 at d = 64)
    naive = (3 * tiles * n * d + 2 * n * n) * 2 + (2 * n * n + n * d) * 2  # Q, K, V per tile; S, P; O
    flash = (n * d + tiles * 2 * n * d) * 2 + n * d * 2 + n * 4  # Q once, K/V per Q block; O, fp32 lse
    assert row["model speed-up"] == pytest.approx(naive / flash) and row["measured speed-up"] == 4.5


def test_model_vs_ncu_summary_ranges_and_counts():
    import pandas as pd

    table = pd.DataFrame(
        {
            "seq_len": [4096, 4096, 16384, 1024],
            "metric": ["dram__bytes_read.sum"] * 3 + ["dram__bytes_read.sum"],
            "ratio": [1.0, 0.9, 1.04, 5.0],
        }
    )
    summary = readers.model_vs_ncu_summary({"fp32": table}, min_seq_len=4096, tolerance=0.05)
    assert summary.loc["DRAM read bytes", ("fp32", "model ÷ ncu")] == "0.9–1.04"  # N = 1024 left out
    assert summary.loc["DRAM read bytes", ("fp32", "within ±5%")] == "2 of 3"


def test_plot_variants_draws_ours_solid_and_skips_absent_variants():
    import pandas as pd

    frame = pd.DataFrame(
        {"kernel": ["numba_tiled", "numba_tiled", "torch_math", "torch_math"], "seq_len": [1024, 4096] * 2}
        | {"time_ms": [1.0, 9.0, 0.5, 4.0]}
    )
    fig, ax = plt.subplots()
    drawn = charts.plot_variants(ax, frame, ["numba_tiled", "numba_fast", "torch_math"])
    assert drawn == ["numba_tiled", "torch_math"]
    styles = {line.get_label(): line.get_linestyle() for line in ax.get_lines()}
    assert styles == {charts.VARIANT_LABELS["numba_tiled"]: "-", charts.VARIANT_LABELS["torch_math"]: "--"}
    assert "ms" in ax.get_ylabel() and "tokens" in ax.get_xlabel()
    plt.close(fig)


def test_target_misses_keep_missed_targets_with_a_short_cause():
    import pandas as pd

    long_cause = "measured: " + "word " * 60
    table = pd.DataFrame(
        {
            "kernel": ["tiled", "tiled", "tiled"],
            "launch": ["fa2"] * 3,
            "seq_len": [16384, 16384, 1024],
            "head_dim": [128, 64, 128],
            "metric": ["dram__bytes_read.sum"] * 3,
            "ratio": [0.64, 1.01, 0.5],
            "within_5pct": [False, True, False],
            "target": [True, True, True],
            "cause": ["a head cut by a wave boundary; measured", long_cause, "small N"],
        }
    )
    misses = readers.target_misses({"fp32": table}, min_seq_len=4096)
    assert misses[["N", "d", "ratio"]].values.tolist() == [
        [16384, 128, 0.64]
    ]  # in tolerance, small N left out
    assert misses["cause"].item() == "a head cut by a wave boundary"
    short = readers.short_cause(long_cause)
    assert len(short) <= 162 and short.endswith(" …") and long_cause.startswith(short[:-2])


def test_plot_model_vs_ncu_one_handle_per_launch_and_size():
    import pandas as pd

    table = pd.DataFrame(
        {
            "kernel": ["naive", "naive", "tiled"],
            "launch": ["qk", "pv", "fa2"],
            "seq_len": [1024, 4096, 4096],
            "head_dim": [64, 128, 128],
            "metric": ["dram__bytes_read.sum"] * 3,
            "ratio": [1.0, 40.0, float("nan")],
        }
    )
    fig, ax = plt.subplots()
    handles = charts.plot_model_vs_ncu(ax, table, {"dram__bytes_read.sum": "DRAM read bytes"}, 0.05)
    labels = [h.get_label() for h in handles]
    assert labels[:5] == ["naive qk", "naive pv", "tiled fa2", "N = 1K", "N = 4K"]
    drawn = [line for line in ax.get_lines() if len(line.get_xdata()) == 1]
    assert len(drawn) == 2  # the NaN ratio is not drawn; 40× is drawn at the edge
    assert max(line.get_ydata()[0] for line in drawn) == 20.0
    plt.close(fig)


def test_a_variant_run_replaces_every_row_of_its_variants_and_nothing_else(tmp_path):
    main = write(
        tmp_path,
        TC_HEADER + "torch_flash,,bf16,16,16,1024,64,False,0.25,,\n"
        "cupy_naive,cuBLAS bf16,bf16,16,16,1024,64,False,,,not timed: TypeError\n"
        "cupy_naive,cuBLAS fp16,fp16,16,16,1024,64,False,9.0,,\n",
        name="tc_main.csv",
    )
    run = write(
        tmp_path,
        TC_HEADER + "cupy_naive,GemmEx bf16,bf16,16,16,1024,64,False,4.0,,\n"
        "cupy_naive,GemmEx fp16,fp16,16,16,1024,64,True,5.0,,\n",
        name="tc_cupy.csv",
    )
    frame = measurement_readers.read_frame(main, schemas.SIDE_BY_SIDE)
    frame = frame.assign(causal=frame["causal"].astype(str) == "True")
    out = readers.with_variant_run(frame, run)
    # torch_flash kept; both old cupy rows (the untimed bf16 one and the timed fp16 one) gone
    assert sorted(zip(out.kernel, out.median_ms.astype(float))) == [
        ("cupy_naive", 4.0),
        ("cupy_naive", 5.0),
        ("torch_flash", 0.25),
    ]
    assert bool(out[out.median_ms == 5.0].causal.item())
    assert readers.with_variant_run(frame, None) is frame


def test_joules_ratio_table_has_one_column_per_model_and_names_those_within_the_goal():
    """Lecture 9's table: the mean ratio over N per kernel and model, and the models within ±15 % at
    every N (a mean inside the band is not enough: fa2_tc's counters mean 1.0 hides a 1.2)."""
    import pandas as pd

    from course import joules

    assert doctest.testmod(joules).failed == 0
    rows = [  # variant, dtype, pass, model, N, predicted / measured
        ("fa2_tc", "bf16", "fwd", "logical", 1024, 1.4),
        ("fa2_tc", "bf16", "fwd", "logical", 4096, 1.6),
        ("fa2_tc", "bf16", "fwd", "counters", 1024, 0.8),
        ("fa2_tc", "bf16", "fwd", "counters", 4096, 1.2),
        ("fa2_tc", "bf16", "fwd", "counters + issue", 1024, 0.9),
        ("fa2_tc", "bf16", "fwd", "counters + issue", 4096, 1.1),
        ("torch_cudnn", "bf16", "fwd", "counters", 1024, 1.0),
    ]
    mvm = pd.DataFrame(rows, columns=["variant", "dtype", "pass", "model", "seq_len", "ratio_total"])
    table = joules.ratio_table(mvm)
    assert list(table.columns) == ["logical", "counters", "counters + issue", joules.WITHIN]
    assert table.loc["fa2_tc bf16 fwd", "logical"] == pytest.approx((1.4 + 1.6) / 2)
    assert table.loc["fa2_tc bf16 fwd", "counters"] == pytest.approx(1.0)
    assert table.loc["fa2_tc bf16 fwd", joules.WITHIN] == "counters + issue"
    assert table.loc["torch_cudnn bf16 fwd", joules.WITHIN] == "counters"
    assert pd.isna(table.loc["torch_cudnn bf16 fwd", "logical"])
