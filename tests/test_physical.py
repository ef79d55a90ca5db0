"""The physical model's primitives against hand counts."""

import doctest
import importlib
import pkgutil

import pytest

import simlib
from simlib.physical import dram_reads_of_rereads, shared_wavefronts, warp_sectors


def test_coalesced_row_read_is_four_sectors_per_warp():
    # 32 lanes × 4 B consecutive from a 256-B-aligned row start: 128 B = 4 sectors of 32 B
    assert warp_sectors([1024 + 4 * lane for lane in range(32)]) == 4


def test_misaligned_row_read_touches_one_more_sector():
    assert warp_sectors([16 + 4 * lane for lane in range(32)]) == 5


def test_strided_column_read_is_one_sector_per_lane():
    # column of a row-major fp32 matrix with d = 64: lanes 256 B apart
    assert warp_sectors([256 * lane for lane in range(32)]) == 32


def test_half_warp_reads_two_rows_of_sixteen():
    # a 16×16 tile: lanes 0–15 row r, lanes 16–31 row r+1 of a 64-wide matrix: 2 × 64 B = 4 sectors
    assert warp_sectors([256 * (lane // 16) + 4 * (lane % 16) for lane in range(32)]) == 4


@pytest.mark.parametrize("stride_words,expected", [(1, 1), (2, 2), (32, 32), (33, 1), (64, 32), (65, 1)])
def test_bank_conflicts_by_stride(stride_words, expected):
    assert shared_wavefronts([4 * stride_words * lane for lane in range(32)]) == expected


def test_broadcast_is_one_wavefront():
    assert shared_wavefronts([128] * 32) == 1


@pytest.mark.parametrize(
    "lanes,expected", [(range(32), 2), (range(24), 2), (range(16), 1), (range(16, 32), 1)]
)
def test_float4_broadcast_is_one_wavefront_per_half_warp(lanes, expected):
    lanes = list(lanes)
    assert shared_wavefronts([64] * len(lanes), access_bytes=16, lanes=lanes) == expected


@pytest.mark.parametrize("stride_words,expected", [(4, 4), (68, 4), (64, 32), (65, 8)])
def test_float4_rows_by_stride(stride_words, expected):
    # 16 lanes × 16 B = 256 B: at least 2 wavefronts per half-warp. Stride 4 or 68 words: lanes t
    # and t + 8 share 4 banks -> 2 per half. Stride 64: all 16 lanes in banks 0–3 -> 16 per half.
    # Stride 65: lane t covers banks t … t + 3 (mod 32), so a bank holds up to 4 lanes: 4 per half.
    addresses = [4 * stride_words * lane for lane in range(32)]
    assert shared_wavefronts(addresses, access_bytes=16) == expected


def test_access_width_is_checked():
    with pytest.raises(ValueError, match="access_bytes"):
        shared_wavefronts([0], access_bytes=8)


def test_tile_reread_that_fits_l2_is_read_once():
    l2 = 60 * 2**20
    kv_head = 2 * 4096 * 64 * 4  # K and V of one head, fp32: 2 MiB
    assert dram_reads_of_rereads(kv_head, 86, 16 * kv_head, l2) == kv_head


def test_tile_reread_that_does_not_fit_is_read_every_time():
    l2 = 60 * 2**20
    kv_head = 2 * 65536 * 128 * 4  # 64 MiB: larger than L2 by itself
    assert dram_reads_of_rereads(kv_head, 10, kv_head, l2) == 10 * kv_head


def test_docstring_worked_numbers_hold():
    failures = 0
    for info in pkgutil.walk_packages(simlib.__path__, "simlib."):
        if info.name.endswith("__main__"):
            continue
        module = importlib.import_module(info.name)
        failures += doctest.testmod(module).failed
    assert failures == 0
