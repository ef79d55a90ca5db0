"""The cost model (simlib.cost, issue 21): every expected value derived independently of the code under
test (hand counts on small shapes, brute-force walks, the committed measurements), and the freeze
protocol's files (the fit, the predictions written before the post-freeze run, the table) reproducible."""

import json
import math

import numpy as np
import pandas as pd
import pytest

from simlib import Workload, count, load_preset
from simlib.cost import IMPLEMENTATIONS, Launch, Work, launch_cost, load_cost_hardware, predict
from simlib.cost.calibration import Calibration, load_calibration
from simlib.cost.check import parse_shapes, predict_shapes, table
from simlib.cost.common import visited
from simlib.cost.fit import fit, text
from simlib.cost.logical import register_tiled
from simlib.cost.model import waves
from simlib.cost.predict_command import energy_of_algorithm
from simlib.cost.rates import COST_DIR, derive_units, shared_split
from simlib.energy import MEASUREMENTS, energy
from simlib.schedule_protocol import DoesNotFit

HW = load_cost_hardware("h200")
EMPTY = Calibration({})


# --- work counts: hand formulas -------------------------------------------------------------------


def test_naive_matmul_ffmas_are_the_products_multiply_adds():
    w = Workload(300, 64, batch=2, heads=3, dtype="fp32")
    qk, softmax, pv = IMPLEMENTATIONS["numba_naive"].launches(w, EMPTY)
    assert qk.work.ffma == pv.work.ffma == 6 * 300 * 300 * 64  # one FFMA per multiply-add of QKᵀ and of PV
    assert softmax.work.mufu == 6 * 300 * 300  # one exp per score
    assert qk.blocks == 6 * math.ceil(300 / 16) ** 2  # (⌈N/16⌉ × ⌈N/16⌉) tiles per head


def test_tensor_core_flops_are_four_n_squared_d_over_the_visited_tiles():
    w = Workload(256, 64, batch=1, heads=2, dtype="bf16")
    (fa2,) = IMPLEMENTATIONS["fa2_tc"].launches(w, EMPTY)
    assert fa2.work.tensor_flops == 4 * 2 * 256 * 256 * 64
    # causal: tile (i, j) of 64 × 64 is visited when j ≤ i (aligned Q and K): 1 + 2 + 3 + 4 of 16 tiles
    (c,) = IMPLEMENTATIONS["fa2_tc"].launches(
        Workload(256, 64, batch=1, heads=2, dtype="bf16", causal=True), EMPTY
    )
    assert c.work.tensor_flops == 4 * 2 * (10 * 64 * 64) * 64


def test_visited_scores_equal_a_brute_force_tile_walk():
    """Scores computed by a kernel that skips the K/V tiles past a Q block's last row (causal) and
    computes the rest whole (clipped at N), walked tile by tile."""
    for n, br, bc, causal in ((10, 4, 4, True), (37, 8, 16, True), (100, 32, 32, False), (129, 64, 48, True)):
        walked = sum(
            min(br, n - q0) * min(bc, n - k0)
            for q0 in range(0, n, br)
            for k0 in range(0, n, bc)
            if not causal or k0 <= q0 + min(br, n - q0) - 1
        )
        assert visited(Workload(n, 8, causal=causal), br, bc)[0] == walked


def test_eager_16bit_moves_twenty_bytes_per_score():
    """Written by hand from the six passes: S out (2), scale (2 + 2), softmax bf16 -> fp32 (2 + 4),
    cast (4 + 2), P in (2): 20 B per score, plus Q, K, V and O."""
    b, h, n, d = 2, 4, 512, 64
    launches = IMPLEMENTATIONS["eager_bf16"].launches(Workload(n, d, batch=b, heads=h, dtype="bf16"), EMPTY)
    el = b * h * n * n
    qkvo = 2 * (b * h * n * d) * 2 * 2  # Q, K read by the first GEMM, V, O by the second, 2 B each
    assert sum(x.work.dram_bytes for x in launches) == pytest.approx(20 * el + qkvo)


def test_busiest_sm_quantization_equals_a_round_robin_walk():
    """q = (blocks on the busiest SM, wave after wave) / (blocks / SMs), the blocks of each wave dealt
    round-robin to the SMs; 256 threads of 64 registers: 4 resident blocks per SM (32 warps: not
    latency-bound)."""
    for blocks in (128, 132, 200, 2048, 5000):
        launch = Launch("x", "x", Work(), blocks=blocks, threads=256, registers=64, shared_bytes=0)
        left, busiest = blocks, 0
        while left:
            wave = min(left, 4 * HW.sms)
            busiest += max(wave // HW.sms + (i < wave % HW.sms) for i in range(HW.sms))
            left -= wave
        assert waves(launch, HW)[1] == pytest.approx(busiest / (blocks / HW.sms))


# --- time and energy: the stated combination, recomputed by hand ------------------------------------


def test_launch_time_and_energy_are_the_stated_sums():
    w = Work(dram_bytes=1e9, l2_bytes=3e9, instructions=5e9, ffma=6.4e10, mufu=1e9, shared_wavefronts=1e8)
    c = launch_cost(Launch("x", "x", w), HW, Calibration({"x": {"eta": 0.5}}))
    r = HW.rate
    roofs = {
        "dram": 1e9 / r["dram_bytes"],
        "l2": 3e9 / r["l2_bytes"],
        "issue": 5e9 / r["issue"],
        "ffma": 6.4e10 / r["ffma"],
        "mufu": 1e9 / r["mufu"],
        "shared": 1e8 / r["shared_wavefronts"],
    }
    bound = max(roofs, key=roofs.get)
    assert c.bound == bound
    assert c.time_s == pytest.approx(r["launch_s"] + roofs[bound] / 0.5)
    p = HW.price
    # every warp instruction no other figure prices: all, less FFMA, MUFU and the 4-byte loads of 3 GB
    other = 5e9 - 6.4e10 / 32 - 1e9 / 32 - 3e9 / (32 * 4)
    want = (
        1e-12
        * (
            1e9 * p["dram_byte"]
            + 2e9 * p["l2_byte"]
            + 6.4e10 * p["ffma"]
            + 1e9 / 32 * p["mufu_instruction"]
            + 128 * 1e8 * p["shared_byte"]
            + other * p["other_instruction"]
        )
        + HW.static_w * c.time_s
    )
    assert c.energy_j == pytest.approx(want)


def test_serial_units_add():
    w = Work(tensor_flops=6.075e14, mufu=3.988e12)  # about one second of each
    c = launch_cost(Launch("x", "x", w, serial=("tensor", "mufu")), HW, EMPTY)
    assert c.bound == "tensor + mufu"
    assert c.roof_s == pytest.approx(w.tensor_flops / HW.rate["tensor_flops"] + w.mufu / HW.rate["mufu"])


def test_a_sequence_takes_the_sum_of_its_launches():
    p = predict("torch_math", Workload(2048, 64, batch=2, heads=8, dtype="fp32"))
    assert p.time_s == pytest.approx(sum(c.time_s for c in p.launches))
    assert p.energy_j == pytest.approx(sum(c.energy_j for c in p.launches))


# --- hardware figures -------------------------------------------------------------------------------


def test_shared_split_solves_both_calibrations():
    a, b = shared_split(15.93, 6.822)
    assert a + 128 * b == pytest.approx(128 * 15.93)  # one LDS.32: 128 B
    assert a + 512 * b == pytest.approx(512 * 6.822)  # one LDS.128: 512 B


def test_derive_units_subtracts_static_and_companions():
    rows = [
        {"bench": "static", "repeat": "0", "watts": 100.0, "rate_per_s": None},
        {
            "bench": "fp32_fma",
            "repeat": "0",
            "watts": 200.0,
            "rate_per_s": 1e13,
            "fp32_per_unit": None,
            "int_per_unit": None,
        },
        {
            "bench": "int_alu",
            "repeat": "0",
            "watts": 150.0,
            "rate_per_s": 5e11,
            "fp32_per_unit": None,
            "int_per_unit": None,
        },
        {
            "bench": "x",
            "repeat": "0",
            "watts": 400.0,
            "rate_per_s": 1e12,
            "fp32_per_unit": 2.0,
            "int_per_unit": 0.5,
        },
    ]
    out = derive_units(rows)
    ffma, imad = 100 / 1e13 / 1e-12, 50 / 5e11 / 1e-12  # 10 pJ, 100 pJ
    assert out["x"]["pj"] == pytest.approx(300 / 1e12 / 1e-12 - 2 * ffma - 0.5 * imad)


def test_every_rate_and_price_says_where_it_comes_from():
    for name in (*(f"rate:{k}" for k in HW.rate), *(f"price:{k}" for k in HW.price)):
        assert HW.sources[name], name
    assert all(HW.measured[f"rate:{k}"] for k in ("mufu", "issue", "l2_bytes", "dram_bytes"))  # measured
    assert all(HW.measured[f"price:{k}"] for k in ("mufu_instruction", "other_instruction", "l2_byte_v4"))


# --- the freeze protocol's files ---------------------------------------------------------------------


def test_the_fit_file_is_reproducible():
    assert (COST_DIR / "h200_fit.json").read_text() == text(fit())


def test_the_post_freeze_predictions_are_the_frozen_models():
    """Each round's predictions were written before its run: the latest round's must still be what the
    model predicts (no tuning after seeing the data); an earlier round's, made by an earlier frozen model,
    must be the file as written (its sidecar's sha256)."""
    from simlib.cost.check import ROUNDS, parse_variants

    written = [r for r in ROUNDS if (COST_DIR / r.predictions).is_file()]
    for rnd in written[:-1]:
        side = json.loads((COST_DIR / (rnd.predictions + ".provenance.json")).read_text())
        assert (
            side["sha256"]
            == __import__("hashlib").sha256((COST_DIR / rnd.predictions).read_bytes()).hexdigest()
        )
    old = pd.read_csv(COST_DIR / written[-1].predictions)
    shapes = sorted(
        {(r.batch, r.heads, r.seq_len, r.head_dim, int(r.causal)) for r in old.itertuples()},
        key=lambda s: list(old.seq_len).index(s[2]),
    )
    pairs = list(dict.fromkeys(zip(old.implementation, old.dtype)))
    new = predict_shapes(
        parse_shapes(";".join(",".join(map(str, s)) for s in shapes)),
        old.frozen_commit.iloc[0],
        parse_variants(",".join(f"{i}:{d}" for i, d in pairs)),
    )
    key = ["implementation", "dtype", "batch", "heads", "seq_len", "head_dim", "causal"]
    merged = old.merge(new, on=key, suffixes=("_old", "_new"))
    assert len(merged) == len(old) == len(new)
    # from round 7 on the predictions are GPU-alone (the run's host probe gives the call's floor)
    for c in ("predicted_gpu_ms", "predicted_gpu_j"):
        np.testing.assert_allclose(merged[f"{c}_new"], merged[f"{c}_old"], rtol=1e-5)
    assert (merged.host_class_new.fillna("") == merged.host_class_old.fillna("")).all()


def test_the_committed_table_is_regenerated_not_edited():
    committed_table = pd.read_csv(COST_DIR / "predicted_vs_measured_h200.csv")
    fresh = pd.read_csv(__import__("io").StringIO(table().to_csv(index=False, float_format="%.6g")))
    pd.testing.assert_frame_equal(committed_table, fresh)
    side = json.loads((COST_DIR / "predicted_vs_measured_h200.csv.provenance.json").read_text())
    assert (
        side["frozen_commit"]
        == committed_table.pipe(
            lambda _: pd.read_csv(COST_DIR / "predictions_after_freeze_h200.csv")
        ).frozen_commit.iloc[0]
    )


def test_every_miss_has_a_cause_and_every_hit_none():
    t = pd.read_csv(COST_DIR / "predicted_vs_measured_h200.csv")
    miss = ~t.time_ok.astype(bool) | (t.energy_ok == False)  # noqa: E712
    assert t.loc[miss, "cause"].notna().all() and (t.loc[miss, "cause"].str.len() > 0).all()
    assert t.loc[~miss, "cause"].isna().all()


def test_post_freeze_rows_are_the_measured_ones():
    """Each round's post-freeze rows' measured values are its run's NVML numbers, read independently here."""
    from simlib.cost.check import ROUNDS

    t = pd.read_csv(COST_DIR / "predicted_vs_measured_h200.csv")
    sizes = {}
    for rnd in ROUNDS:
        after = t[t.when == rnd.when]
        if not (MEASUREMENTS / rnd.validation).is_file():  # its run is not committed yet: no rows
            assert after.empty
            continue
        run = pd.read_csv(MEASUREMENTS / rnd.validation)
        run = run[(run.status == "ok") & (run["pass"] == "fwd")]  # round 7 on: host probes beside
        assert len(after) == len(run)
        sizes[rnd.when] = len(run)
        merged = after.merge(
            run,
            left_on=["implementation", "dtype", "batch", "heads", "seq_len", "head_dim", "causal"],
            right_on=["variant", "dtype", "batch", "heads", "seq_len", "head_dim", "causal"],
        )
        assert len(merged) == len(run)
        # round 8 on: the loop's own time per call; before, the NVML window's (both in the run's file)
        column = "loop_ms_per_call" if rnd.loop_time else "ms_per_call"
        np.testing.assert_allclose(merged.measured_ms, merged[column], rtol=1e-5)
        if rnd.loop_time:
            np.testing.assert_allclose(merged.window_ms, merged.ms_per_call, rtol=1e-5)
            assert (merged.ms_per_call >= merged.loop_ms_per_call).all()  # the window holds the loop
        np.testing.assert_allclose(merged.measured_j, merged.joules_per_call, rtol=1e-5)
    assert {k: sizes[k] for k in (ROUNDS[0].when, ROUNDS[1].when)} == {ROUNDS[0].when: 36, ROUNDS[1].when: 24}


def test_each_rounds_shapes_are_new():
    """A round measures shapes no earlier round predicted and no committed measurement holds (chosen after
    its freeze), and its predictions name one frozen commit, the one its sidecar names."""
    from simlib.cost.check import ROUNDS, committed

    seen = {
        (r.batch, r.heads, r.seq_len, r.head_dim, bool(r.causal))
        for r in committed().itertuples()
        if not str(r.source).startswith("cost_validate")
    }
    for rnd in ROUNDS:
        if not (COST_DIR / rnd.predictions).is_file():
            continue
        pred = pd.read_csv(COST_DIR / rnd.predictions)
        shapes = {(r.batch, r.heads, r.seq_len, r.head_dim, bool(r.causal)) for r in pred.itertuples()}
        assert len(shapes) >= 4 and not shapes & seen, rnd.when
        seen |= shapes
        side = json.loads((COST_DIR / (rnd.predictions + ".provenance.json")).read_text())
        assert set(pred.frozen_commit) == {side["frozen_commit"]}


# --- the CLI's energy: FlashAttention-2 within 15 % of the H200 -------------------------------------


def test_simlib_energy_fa2_is_within_fifteen_percent_of_the_measured_fa2():
    rows = pd.read_csv(MEASUREMENTS / "energy_attention_h200.csv")
    r = rows[
        (rows.variant == "torch_flash")
        & (rows.dtype == "bf16")
        & (rows["pass"] == "fwd")
        & (rows.seq_len == 4096)
    ].iloc[0]
    p = energy_of_algorithm(
        "fa2", Workload(4096, 64, batch=int(r.batch), heads=int(r.heads), dtype="bf16"), "h200"
    )
    assert abs(p.energy_j / r.joules_per_call - 1) <= 0.15


def test_predict_cli_json(capsys):
    from simlib.command_line import main

    code = main(
        [
            "predict",
            "--implementation",
            "fa2_tc",
            "--seq-len",
            "1000",
            "--head-dim",
            "64",
            "--batch",
            "2",
            "--heads",
            "4",
            "--dtype",
            "bf16",
            "--causal",
            "--json",
        ]
    )
    out = json.loads(capsys.readouterr().out)
    assert code == 0 and {"time_ms", "energy_j", "bound", "launches"} <= set(out)
    gpu = sum(x["time_ms"] for x in out["launches"])
    assert out["gpu_ms"] == pytest.approx(gpu)
    # a call takes its launches' time or the host's floor per call, whichever is longer (simlib.cost.host)
    assert out["time_ms"] == pytest.approx(max(gpu, out["host_floor_ms"]))


@pytest.mark.parametrize(
    "argv, message",
    [
        (["--implementation", "torch_cudnn", "--dtype", "bf16"], "measured only"),
        (["--implementation", "numba_fast", "--dtype", "fp32", "--causal"], "causal"),
        (["--implementation", "fa2_tc", "--dtype", "fp32"], "dtype"),
        (["--implementation", "nope", "--dtype", "bf16"], "--implementation"),
    ],
)
def test_predict_cli_refuses_in_one_line(argv, message, capsys):
    from simlib.command_line import main

    code = main(["predict", "--seq-len", "1024", "--head-dim", "64", *argv])
    err = capsys.readouterr().err
    assert code == 2 and message in err and err.count("\n") == 1


# --- the logical model's register level and count()'s register check --------------------------------


def test_register_tile_divides_the_thread_level_operand_reads():
    e = energy(count("naive", Workload(512, 64)), "a100-40gb")
    t = register_tiled(e, 4)
    operands = 2 * 2 * 512 * 512 * 64  # Q, K (scores) and P, V (pv): one read each per multiply-add
    reads = lambda x: x.rows[(x.rows.level == "SRAM") & (x.rows.op == "read")].elements.sum()  # noqa: E731
    assert reads(e) == operands
    assert reads(t) == operands / 4
    assert t.rows[t.rows.level == "registers"].elements.sum() == operands * 3 / 4


def test_count_checks_registers_per_thread():
    """naive_tc with one warp and 512-key tiles at d = 128: a 16 × 512 fp32 accumulator over 32 threads
    is 256 registers per thread, one over the 255 a thread may have."""
    h200 = load_preset("h200")
    with pytest.raises(DoesNotFit, match="256 registers per thread"):
        count("naive_tc", Workload(4096, 128, dtype="bf16"), hardware=h200, warps=1, block_cols=512)
    count("naive_tc", Workload(4096, 128, dtype="bf16"), hardware=h200, warps=1, block_cols=256)  # 128: fits


def test_the_calibration_covers_every_class_the_implementations_use():
    cal = load_calibration()
    for _name, impl in IMPLEMENTATIONS.items():
        if not impl.modelled:
            continue
        for dtype in impl.dtypes:
            for d in (64, 128):
                w = Workload(2048, d, batch=4, heads=8, dtype=dtype)
                impl.launches(w, cal)
    assert not cal.missing


def test_cost_md_tables_are_generated():
    from pathlib import Path

    from simlib.cost.check import report_markdown

    doc = (Path(__file__).resolve().parent.parent / "docs" / "COST.md").read_text()
    start = doc.index("<!-- generated: python -m simlib.cost.check --markdown -->\n") + len(
        "<!-- generated: python -m simlib.cost.check --markdown -->\n"
    )
    assert doc[start : doc.index("<!-- end generated -->")] == report_markdown()
