"""FA2's own tile rule and the full on-chip budget of each schedule (issue 13, items 1 and 2).

Expected tiles come from the FA2 reference kernel's launch code as the issue and data/fa2_tiles.json
quote it (flash_fwd_launch_template.h: d = 64 → 128×128; d = 128 → 128×64, or on sm8x 128×32 and
64×64 causal; d = 256 → 64×64, 128×64 on sm80); expected bytes are hand arithmetic written out.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from simlib import Workload, count, load_preset
from simlib.fa2_tile_rule import arch_of, kernel_head_dim, kernel_tiles
from simlib.schedule_protocol import DoesNotFit


@pytest.mark.parametrize(
    "gpu,d,causal,tiles",
    [
        ("h200", 64, False, (128, 128)),
        ("h200", 128, False, (128, 64)),
        ("h200", 128, True, (128, 64)),
        ("rtx-4090", 128, False, (128, 32)),  # sm89 is "sm8x": is_sm8x branch
        ("rtx-4090", 128, True, (64, 64)),
        ("a100-40gb", 256, False, (128, 64)),  # sm80 has the shared memory for 128×64 at d = 256
        ("h100-sxm", 256, False, (64, 64)),
        ("h200", 32, False, (128, 128)),
        ("h200", 48, False, (128, 128)),  # runs as the d = 64 kernel
    ],
)
def test_fa2_default_tiles_are_the_kernels(gpu, d, causal, tiles):
    r = count("fa2", Workload(8192, d, causal=causal), hardware=load_preset(gpu))
    assert (r.block_rows, r.block_cols) == tiles and r.mapping.rule == "fa2"
    expected_arch = {"h200": "sm90", "h100-sxm": "sm90", "rtx-4090": "sm8x", "a100-40gb": "sm80"}[gpu]
    assert (r.to_dict()["tile_rule"], r.to_dict()["tile_arch"]) == ("fa2", expected_arch)


def test_head_dim_rounding_and_architectures():
    assert [kernel_head_dim(d) for d in (1, 32, 33, 100, 160, 256)] == [32, 32, 64, 128, 192, 256]
    assert [arch_of(cc) for cc in ("8.0", "8.6", "8.9", "9.0", "7.5", None)] == [
        "sm80",
        "sm8x",
        "sm8x",
        "sm90",
        None,
        None,
    ]
    with pytest.raises(ValueError, match="head_dim=512"):
        count("fa2", Workload(1024, 512))


def test_the_issues_worked_check():
    # N = 4096, d = 64, fp16, Br = 128: reads Nd(1 + 2N/Br) = 262,144 · 65 elements, writes Nd + N stats
    r = count("fa2", Workload(4096, 64, dtype="fp16"), hardware=load_preset("h200"))
    assert r.traffic.elements("HBM", "read") == 17_039_360
    assert r.hbm_read_bytes == 34_078_720 and r.hbm_write_bytes == 262_144 * 2 + 4096 * 4 == 540_672


def test_tiles_shrink_only_when_the_working_set_does_not_fit():
    # T4: 64 KiB per block. d = 256 fp16, 64×64: (64 + 2·64)·256·2 = 98,304 B > 65,536 → Bc halves to
    # 32: (64 + 64)·256·2 = 65,536 B, which fits
    r = count("fa2", Workload(4096, 256), hardware=load_preset("t4"))
    assert (r.block_rows, r.block_cols) == (64, 32) and r.working_set.bytes("SRAM") == 65_536
    # fp32 doubles the bytes: d = 64, 128×128 → (128 + 256)·64·4 = 98,304 > 48 KiB; Bc → 64:
    # (128 + 128)·256 = 65,536 > 49,152; Br → 64: (64 + 128)·256 = 49,152 fits
    r = count("fa2", Workload(4096, 64, dtype="fp32"), sram_bytes="48KiB")
    assert (r.block_rows, r.block_cols) == (64, 64)
    with pytest.raises(ValueError, match="even 16×16"):
        count("fa2", Workload(4096, 256, dtype="fp32"), sram_bytes="16KiB")


def test_the_optional_double_buffer_takes_its_own_room():
    # T4, d = 128 fp16, the kernel's 128×64: (128 + 2·64)·128·2 = 65,536 B fits 64 KiB exactly; a second
    # K/V buffer adds 2·64·128·2 = 32,768 B: halve the larger block (Br → 64: (64 + 256)·256 = 81,920 B,
    # still over), then Bc → 32: (64 + 64 + 64)·256 = 49,152 B
    t4, w = load_preset("t4"), Workload(4096, 128)
    single = count("fa2", w, hardware=t4)
    double = count("fa2", w, hardware=t4, double_buffer=True)
    assert (single.block_rows, single.block_cols, single.working_set.bytes("SRAM")) == (128, 64, 65_536)
    assert (double.block_rows, double.block_cols, double.working_set.bytes("SRAM")) == (64, 32, 49_152)
    assert double.to_dict()["double_buffer"] is True and single.to_dict()["double_buffer"] is False
    assert single.hbm_read_bytes == (4096 * 128 + 4096 // 128 * 2 * 4096 * 128) * 2  # Tr = 32


def test_tile_rule_fa1_keeps_the_papers_rule_for_fa2():
    # H200: M = 232,448/2 = 116,224 → Bc = ⌈116224/256⌉ = 454, Br = min(454, 64) = 64, Tr = 64
    r = count("fa2", Workload(4096, 64), hardware=load_preset("h200"), tile_rule="fa1")
    assert (r.block_rows, r.block_cols, r.mapping.rule) == (64, 454, "fa1")
    assert r.traffic.elements("HBM", "read") == 262_144 + 64 * 524_288


def test_explicit_tiles_that_do_not_fit_are_refused_with_the_bytes():
    # the issue's 454×454 at d = 64 on the H200: S/P alone is 454²·4 = 824,464 B of registers
    with pytest.raises(ValueError, match=r"block_rows=454, block_cols=454: fa2 needs 944,320 B of registers"):
        count("fa2", Workload(4096, 64), hardware=load_preset("h200"), block_rows=454, block_cols=454)
    # SRAM: 128×128 fp32 at d = 64 needs (128 + 256)·64·4 = 98,304 B
    with pytest.raises(ValueError, match=r"98,304 B of SRAM.*holds 49,152 B"):
        count("fa2", Workload(4096, 64, dtype="fp32"), sram_bytes="48KiB", block_rows=128, block_cols=128)
    # the A100's 163 KiB per block and the lecture's 256×256 fa1 tiles at d = 64:
    # (2·256·64 + 2·256·64 + 256²)·2 + 2·256·4 = 264,192 B
    with pytest.raises(ValueError, match=r"264,192 B of SRAM"):
        count("fa1", Workload(4096, 64), hardware=load_preset("a100-40gb"), block_rows=256, block_cols=256)


def test_the_papers_rule_is_counted_as_published_with_its_overshoot():
    # 192 KiB fp16, d = 128: Br = 128, Bc = 192; Q_i, O_i, K_j, V_j, S_ij in fp16 + ℓ_i, m_i fp32:
    # (2·128·128 + 2·192·128 + 128·192)·2 + 2·128·4 = 214,016 B, 17,408 B over 196,608
    r = count("fa1", Workload(4096, 128), sram_bytes="192KiB")
    assert (r.block_rows, r.block_cols) == (128, 192)
    assert r.working_set.bytes("SRAM") == 214_016 and r.sram_overshoot_bytes == 17_408
    tc = -(-4096 // 192)
    assert (
        r.traffic.elements("HBM", "read")
        - r.traffic.elements("HBM", "read", "l")
        - r.traffic.elements("HBM", "read", "m")
        == 2 * 4096 * 128 + tc * 2 * 4096 * 128
    )
    # d = 64 fits: (2·64·64 + 2·384·64 + 64·384)·2 + 2·64·4 = 164,352 B ≤ 196,608
    fits = count("fa1", Workload(4096, 64), sram_bytes="192KiB")
    assert fits.working_set.bytes("SRAM") == 164_352 and fits.sram_overshoot_bytes is None
    # Algorithm 4 at 192 KiB, d = 64 (Br = 64, Bc = 384): 4·384·64·2 + 4·64·64·2 + 2·64·384·2 + 3·64·4
    # = 328,448 B, 131,840 B over
    bwd = count("flash_bwd", Workload(1024, 64), sram_bytes="192KiB")
    assert bwd.sram_overshoot_bytes == 328_448 - 196_608 == 131_840


def test_every_modelled_schedule_reports_bytes_per_level():
    w = Workload(1024, 64, heads=4, kv_heads=1)
    naive = count("naive", w, matmul_tile=32, softmax_threads=128).to_dict()
    assert naive["onchip_sram_bytes"] == max(2 * 32 * 32 * 2, 128 * 4)  # A and B tiles: 4,096 B
    decode = count("decode", Workload(8192, 128, heads=32, kv_heads=8, query_len=1), block_cols=64).to_dict()
    # packed rows R = 4: (4 + 2·64)·128·2 in SRAM; (4·64 + 4·128 + 2·4)·4 in registers
    assert (decode["onchip_sram_bytes"], decode["onchip_register_bytes"]) == (33_792, 3_104)
    assert decode["tile_rule"] == "explicit"
    fast = count("fa2_fast", Workload(4096, 64, dtype="fp32")).to_dict()
    # the fast kernel's padded layout at d = 64: Qs 128·68, Ks 64·68, Vs 64·64, Ps 128·72 (Bc + (NTX − Bc)
    # mod 32 = 64 + 8), Red 128·8 floats
    assert fast["onchip_sram_bytes"] == (128 * 68 + 64 * 68 + 64 * 64 + 128 * 72 + 128 * 8) * 4 == 109_568
    assert count("unfused", w).to_dict()["onchip_sram_bytes"] is None  # not modelled


@settings(max_examples=400, deadline=None)
@given(
    n=st.integers(1, 5000),
    d=st.sampled_from([16, 32, 48, 64, 96, 128, 160, 192, 256]),
    dtype=st.sampled_from(["fp16", "bf16", "fp32"]),
    causal=st.booleans(),
    sram=st.integers(1024, 256 * 1024),
)
def test_fa2_rule_keeps_the_kernels_tiles_unless_they_do_not_fit(n, d, dtype, causal, sram):
    w = Workload(n, d, dtype=dtype, causal=causal)
    eb = w.element_bytes
    table_br, table_bc = kernel_tiles(d, causal=causal)
    br, bc = min(table_br, n), min(table_bc, n)
    try:
        r = count("fa2", w, sram_bytes=sram)
    except DoesNotFit:
        assert (min(16, br) + 2 * min(16, bc)) * d * eb > sram or (br + 2 * bc) * d * eb > sram
        return
    need = (r.block_rows + 2 * r.block_cols) * d * eb  # Q_i, K_j, V_j
    assert r.working_set.bytes("SRAM") == need <= sram
    if (br + 2 * bc) * d * eb <= sram:
        assert (r.block_rows, r.block_cols) == (br, bc)  # the kernel's tiles, untouched
    else:
        assert r.block_rows <= br and r.block_cols <= bc and (r.block_rows, r.block_cols) != (br, bc)
