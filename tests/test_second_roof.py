"""course.second_roof (lecture 10): the roofs past DRAM, from the committed measurements.

Expected values are derived by hand here: the paper's formula (one exponential and 4d matmul FLOPs
per score), an mma.sync's FLOPs, the register file's arithmetic, a CSV row read directly.
"""

import csv
import doctest

import pytest

from course import second_roof as roof
from measurements.manifest import lookup
from simlib import load_preset


def test_worked_numbers_in_the_docstring():
    result = doctest.testmod(roof)
    assert result.attempted and not result.failed


def test_the_exp_roof_reproduces_the_fa3_papers_fifty_percent():
    ping = roof.fa3()["section_3_1_pingpong"]
    d = ping["head_dim"]
    share = roof.exp_share(d, ping["fp16_matmul_tflops"] * 1e12, ping["special_function_tflops"] * 1e12)
    assert 4 * d == ping["matmul_flops_per_exponential"]
    assert abs(share - ping["exponential_share_of_matmul_cycle"]) < 0.01


def test_rates_come_from_the_ceilings_the_preset_and_the_papers():
    r = roof.rates()
    ceilings = json_ceilings()
    assert r.mma_sync == ceilings["mma_bf16"]["tflops"] * 1e12
    assert r.dram == ceilings["copy"]["gbps"] * 1e9
    assert r.wgmma == load_preset("h200").peak_flops["bf16"]
    assert r.mufu == roof.fa3()["section_3_1_pingpong"]["special_function_tflops"] * 1e12
    assert (
        r.issue == 4 * 1 * load_preset("h200").sm_count * r.clock_hz
    )  # 4 schedulers, 1 warp instruction/clock


def json_ceilings():
    import json

    return json.loads(lookup("ceilings_h200.json").read_text())


def test_serial_and_overlapped_bounds_by_hand():
    r = roof.rates()
    for d in (64, 128):
        t_mm, t_exp = 4 * d / r.mma_sync, 1 / r.mufu
        b = roof.attention_bounds(d, "mma.sync")
        assert b["tensor + exp in series"] == pytest.approx(4 * d / (t_mm + t_exp) / 1e12, rel=1e-12)
        assert b["tensor, exp overlapped"] == pytest.approx(4 * d / max(t_mm, t_exp) / 1e12, rel=1e-12)
        assert b["tensor + exp in series"] < b["tensor alone"]
    with pytest.raises(ValueError, match="instruction must be 'mma.sync' or 'wgmma'"):
        roof.attention_bounds(64, "hmma")


def test_a_kernel_sequence_is_bounded_by_the_sum_of_its_kernels_roofs():
    kernels = roof.kernel_sequence("torch_math", "bf16", 1, 16, 4096)
    totals = roof.sequence_totals(kernels)
    assert totals["sum of per-kernel roofs"] >= totals["one roofline"]
    assert totals["measured"] >= totals["sum of per-kernel roofs"]
    # one row by hand, straight from the CSV
    with lookup(roof.KERNEL_COUNTERS).open(newline="") as f:
        gemm = next(
            r
            for r in csv.DictReader(f)
            if (r["variant"], r["dtype"], r["pass"], r["batch"], r["seq_len"])
            == ("torch_math", "bf16", "fwd", "1", "4096")
            and "gemm" in r["kernel"]
        )
    r = roof.rates()
    dram = float(gemm["dram__bytes_read.sum"]) + float(gemm["dram__bytes_write.sum"])
    flops = 2 * float(gemm["smsp__sass_thread_inst_executed_op_ffma_pred_on.sum"])
    row = kernels[kernels.kernel == gemm["kernel"].split("(")[0][:48]].iloc[0]
    assert row.roof_ms == pytest.approx(max(dram / r.dram, flops / r.ffma) * 1e3, rel=1e-12)
    assert row.bound == "FFMA"
    with pytest.raises(ValueError, match="no forward call of nothing"):
        roof.kernel_sequence("nothing", "bf16", 1, 16, 4096)


def test_mma_sync_kernels_issue_one_hmma_per_4096_flops():
    mix = roof.instruction_mix(head_dim=64).set_index("kernel")
    per_1k = 4 * 64 * 1000 / (2 * 16 * 8 * 16)  # m16n8k16: 4096 FLOPs per instruction
    for kernel, instruction in roof.FUSED.items():
        if instruction == "mma.sync":
            assert mix.loc[kernel, "tensor (HMMA/wgmma) per 1k scores"] == per_1k
    assert (mix["issue / measured"] < 1).all() and (mix["IPC per SM"] < 4).all()


def test_registers_decide_fa2_tcs_occupancy():
    regs = roof.registers_and_occupancy("fa2_tc")
    for _, row in regs.iterrows():
        per_warp = -(-row["registers per thread"] * 32 // 256) * 256
        assert row["blocks per SM (registers)"] == 65536 // (per_warp * row["warps per block"])
        # ncu's warps active is within a few points of what the register file allows
        assert abs(row["warps active (ncu)"] - row["occupancy (model)"]) < 0.02
    assert regs["registers per thread"].max() <= load_preset("h200").max_registers_per_thread


def test_achieved_tflops_sit_under_their_serial_roof():
    reached = roof.achieved()
    assert set(reached.kernel) == set(roof.FUSED)
    assert (reached["of tensor + exp"] < 1).all()
    wgmma = reached[reached["tensor instruction"] == "wgmma"]
    assert (wgmma["tensor roof"] == load_preset("h200").peak_flops["bf16"] / 1e12).all()
