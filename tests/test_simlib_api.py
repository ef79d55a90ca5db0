"""Validation, bounds, roofline and units, each against a hand derivation."""

import math

import pytest

from simlib import Workload, compulsory_bytes, count, parse_size, roofline, saha_ye_bytes
from simlib.hardware import Hardware, MemoryLevel


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(seq_len=0, head_dim=64), "seq_len"),
        (dict(seq_len=-3, head_dim=64), "seq_len"),
        (dict(seq_len=16, head_dim=0), "head_dim"),
        (dict(seq_len=16, head_dim=64, batch=0), "batch"),
        (dict(seq_len=16, head_dim=64, heads=1.5), "heads"),
        (dict(seq_len=16, head_dim=64, dtype="fp8"), "dtype"),
    ],
)
def test_workload_rejects_bad_values(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        Workload(**kwargs)


@pytest.mark.parametrize(
    "algorithm,kwargs,needle",
    [
        ("fa4", dict(sram_bytes=1024), "algorithm"),
        ("fa2", dict(sram_bytes=100), "sram_bytes"),  # M=50 < 4d=256
        ("fa2", dict(sram_bytes="12 parsecs"), "sram_bytes"),
        ("fa2", dict(tile_rule="fa1"), "sram_bytes"),  # the paper's rule needs M
        ("fa1", dict(), "sram_bytes"),
        ("fa2", dict(tile_rule="fa3"), "tile_rule"),
        ("fa1", dict(sram_bytes=1024, tile_rule="fa2"), "tile_rule"),  # fa1 has only the paper's rule
        ("fa2", dict(sram_bytes=1024, block_cols=3), "block_cols"),  # ⌈512/256⌉ = 2 < 3
        ("fa1", dict(sram_bytes=1024, block_rows=3), "block_rows"),
        ("fa2", dict(block_rows=0, block_cols=4), "block_rows"),
        ("naive", dict(block_rows=4), "block_rows"),
        ("naive", dict(matmul_tile=0), "matmul_tile"),
        ("naive", dict(sram_bytes=1024, matmul_tile=32), "matmul_tile"),  # 2·32² > 512
        ("naive", dict(softmax_threads=3), "softmax_threads"),
        ("fa2", dict(sram_bytes=1024, matmul_tile=4), "matmul_tile"),
    ],
)
def test_count_rejects_bad_parameters(algorithm, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        count(algorithm, Workload(64, 64), **kwargs)


def test_explicit_blocks_at_the_limit_are_accepted():
    # M = 512 fp16 elements, d = 64 → ⌈512/256⌉ = 2 rows per tile at most
    r = count("fa2", Workload(64, 64), sram_bytes=1024, block_rows=2, block_cols=2)
    assert (r.block_rows, r.block_cols, r.tr, r.tc) == (2, 2, 32, 32)


@pytest.mark.parametrize(
    "text,expected",
    [
        ("196608", 196608),
        ("192KiB", 192 * 1024),
        ("192 kib", 192 * 1024),
        ("100KB", 100_000),
        ("1MiB", 2**20),
        ("0.5MiB", 2**19),
        (4096, 4096),
    ],
)
def test_parse_size(text, expected):
    assert parse_size(text) == expected


@pytest.mark.parametrize("text", ["", "12QB", "-5", "0", "1.5", "KiB", "0.3KB1"])
def test_parse_size_rejects(text):
    with pytest.raises(ValueError, match="sram"):
        parse_size(text)


def test_compulsory_bytes():
    # Q, K, V read once and O written once: 4·N·d elements per head.
    assert compulsory_bytes(Workload(4096, 64, batch=2, heads=3, dtype="fp16")) == 4 * 4096 * 64 * 2 * 6


def test_saha_ye_switches_regime_at_m_equal_d_squared():
    w = Workload(1024, 64, dtype="fp32")
    big_m, small_m = 64 * 64 * 4, 64 * 64 // 4  # M ≥ d²: N²d²/M ; M < d²: N²d/√M
    assert saha_ye_bytes(w, big_m * 4) == pytest.approx(1024**2 * 64**2 / big_m * 4)
    assert saha_ye_bytes(w, small_m * 4) == pytest.approx(1024**2 * 64 / math.sqrt(small_m) * 4)


def _toy_hardware(peak, hbm_bw, sram_bw):
    levels = (
        MemoryLevel("SRAM", 192 * 1024, sram_bw, 128, 160 * 1024),
        MemoryLevel("HBM", 2**34, hbm_bw, 32),
    )
    return Hardware("toy", "toy", {"fp16": peak}, levels, 1, {})


def test_roofline_memory_bound_naive():
    w = Workload(4096, 64, dtype="fp16")
    r = count("naive", w)
    hbm = (3 * 4096 * 64 + 2 * 4096**2 + 2 * 4096**2 + 4096 * 64) * 2
    roof = roofline(r, _toy_hardware(peak=312e12, hbm_bw=1.5e12, sram_bw=1e18))
    assert roof.level_s["HBM"] == pytest.approx(hbm / 1.5e12)
    assert roof.compute_s == pytest.approx(4 * 4096**2 * 64 / 312e12)
    assert roof.time_s == roof.level_s["HBM"]
    assert roof.bound == "memory (HBM)"
    assert roof.arithmetic_intensity == pytest.approx(4 * 4096**2 * 64 / hbm)


def test_roofline_compute_bound():
    r = count("fa2", Workload(4096, 64, dtype="fp16"), sram_bytes="192KiB")
    roof = roofline(r, _toy_hardware(peak=1e12, hbm_bw=1e15, sram_bw=1e18))
    assert roof.bound == "compute"
    assert roof.time_s == pytest.approx(4 * 4096**2 * 64 / 1e12)


def test_result_table_sums_to_totals():
    r = count("fa1", Workload(300, 16, batch=2, heads=2, dtype="fp16"), sram_bytes="8KiB")
    t = r.table()
    assert t.query("level == 'HBM' and op == 'read'")["bytes"].sum() == r.hbm_read_bytes
    assert t.query("level == 'SRAM'")["bytes"].sum() == r.sram_read_bytes + r.sram_write_bytes


def test_compulsory_bytes_counts_kv_per_kv_head():
    # decode: 1 query per head, 32 query heads, 8 KV heads, cache of 8192: K,V per KV head
    w = Workload(8192, 128, heads=32, kv_heads=8, query_len=1, dtype="fp16")
    assert compulsory_bytes(w) == (2 * 1 * 32 + 2 * 8192 * 8) * 128 * 2


@pytest.mark.parametrize(
    "kwargs,needle",
    [
        (dict(seq_len=16, head_dim=8, heads=4, kv_heads=3), "kv_heads"),
        (dict(seq_len=16, head_dim=8, heads=4, kv_heads=8), "kv_heads"),
        (dict(seq_len=16, head_dim=8, query_len=0), "query_len"),
        (dict(seq_len=16, head_dim=8, query_len=17, causal=True), "query_len"),
        (dict(seq_len=16, head_dim=8, causal="yes"), "causal"),
    ],
)
def test_workload_rejects_bad_variants(kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        Workload(**kwargs)


@pytest.mark.parametrize(
    "algorithm,shape,kwargs,needle",
    [
        ("decode", dict(causal=True), dict(sram_bytes="64KiB"), "causal"),
        ("decode", dict(query_len=1), dict(sram_bytes="64KiB", splits=0), "splits"),
        ("decode", dict(query_len=1), dict(sram_bytes="64KiB", block_rows=4), "block_rows"),
        (
            "decode",
            dict(query_len=64, heads=8, kv_heads=1),
            dict(sram_bytes="64KiB"),
            "query_len",
        ),  # 512 rows > 128
        ("naive", {}, dict(splits=2), "splits"),
        ("unfused", {}, dict(matmul_tile=8), "matmul_tile"),
        ("naive_bwd", {}, dict(softmax_threads=8), "softmax_threads"),
        ("flash_bwd", {}, dict(sram_bytes="64KiB", dropout=True), "dropout"),
    ],
)
def test_variant_parameters_are_refused_by_name(algorithm, shape, kwargs, needle):
    with pytest.raises(ValueError, match=needle):
        count(algorithm, Workload(64, 64, **shape), **kwargs)


def test_roofline_sram_binds_only_when_asked():
    r = count("fa2", Workload(4096, 64, dtype="fp16"), sram_bytes="192KiB")
    hw = _toy_hardware(peak=1e18, hbm_bw=1e15, sram_bw=1e12)  # a slow SRAM
    assert roofline(r, hw).bound == "memory (HBM)"
    both = roofline(r, hw, levels=("HBM", "SRAM"))
    assert both.bound == "memory (SRAM)"
    assert both.time_s == pytest.approx((r.sram_read_bytes + r.sram_write_bytes) / 1e12)


def test_every_schedule_follows_the_protocol_and_the_cli_has_its_flags():
    from simlib.command_line import build_parser
    from simlib.counts import all_parameters
    from simlib.schedules import NAMES, SCHEDULES

    assert tuple(SCHEDULES) == NAMES
    flags = build_parser()._subparsers._group_actions[0].choices["count"]._option_string_actions
    for schedule in SCHEDULES.values():
        assert schedule.description and schedule.sram in ("sizes", "checks", "unused")
        for p in schedule.parameters:
            assert all_parameters()[p.name] == p and p.flag in flags and p.help
        assert "--no-dropout" in flags  # the bool parameter's negative form


def test_result_serialisation_is_the_mappings_own_fields():
    r = count("decode", Workload(512, 64, heads=4, kv_heads=1, query_len=1), sram_bytes="64KiB", splits=4)
    d = r.to_dict()
    assert (d["block_cols"], d["splits"], d["block_rows"], d["tr"]) == (128, 4, None, None)  # ⌈32768/256⌉
    assert count("fa2_fast", Workload(256, 64)).to_dict()["thread_rows"] == 32


def test_dtype_max_is_each_formats_largest_finite_number():
    """Independently: numpy's own fp16 and fp32, and bf16 as the fp32 whose low 16 bits are zero with
    the largest finite upper half (0x7F7F: exponent 254, all 7 fraction bits set)."""
    import numpy as np

    from simlib.units import DTYPE_BYTES, DTYPE_MAX

    assert set(DTYPE_MAX) == set(DTYPE_BYTES)
    assert DTYPE_MAX["fp16"] == float(np.finfo(np.float16).max) == 65504.0
    assert DTYPE_MAX["fp32"] == float(np.finfo(np.float32).max)
    assert DTYPE_MAX["bf16"] == float(np.array([0x7F7F0000], dtype=np.uint32).view(np.float32)[0])
