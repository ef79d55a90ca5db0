"""data/fa2_tiles.json: FlashAttention-2's forward tile table, read from its reference kernel."""

import itertools
import json
import re
from pathlib import Path

import pytest

TABLE = json.loads((Path(__file__).resolve().parents[1] / "data" / "fa2_tiles.json").read_text())
ENTRIES = TABLE["entries"]
SOURCE_KEYS = ("repository", "path", "commit", "commit_date", "function", "lines", "read_on")


def lookup(entries, head_dim, arch, dropout, causal):
    """First entry that matches; null fields match anything (the file's `how_to_read.lookup`)."""
    for e in entries:
        if e["head_dim"] == head_dim and all(
            e[k] is None or e[k] == v for k, v in (("arch", arch), ("dropout", dropout), ("causal", causal))
        ):
            return e
    return None


@pytest.mark.parametrize(
    "entry",
    ENTRIES + TABLE["historical_entries"],
    ids=lambda e: f"d{e['head_dim']}-{e['arch']}-{e['dropout']}-{e['causal']}",
)
def test_every_entry_cites_a_commit_and_a_function(entry):
    source = entry["source"]
    assert all(source.get(k) for k in SOURCE_KEYS)
    assert re.fullmatch(r"[0-9a-f]{40}", source["commit"])
    assert source["path"] == "csrc/flash_attn/src/flash_fwd_launch_template.h"
    assert source["function"].startswith("run_mha_fwd_hdim")


@pytest.mark.parametrize(
    "head_dim, arch, dropout, causal",
    list(
        itertools.product(
            (32, 64, 96, 128, 160, 192, 224, 256), ("sm80", "sm8x", "sm90"), (False, True), (False, True)
        )
    ),
)
def test_every_case_has_a_tile(head_dim, arch, dropout, causal):
    e = lookup(ENTRIES, head_dim, arch, dropout, causal)
    assert e is not None
    assert e["kernel_head_dim"] >= head_dim and e["kernel_head_dim"] % 32 == 0
    assert e["threads"] == 32 * e["warps"]


def test_smem_is_one_q_tile_and_one_k_and_one_v_tile_of_two_byte_elements():
    for e in ENTRIES + TABLE["historical_entries"]:
        q, k, v = (
            e["block_rows"] * e["kernel_head_dim"],
            e["block_cols"] * e["kernel_head_dim"],
            e["block_cols"] * e["kernel_head_dim"],
        )
        assert e["smem_bytes"] == 2 * (q + k + v)


def test_the_sizes_the_source_comments_state():
    """Numbers written in the launch template's own comments (independent of the traits formula)."""
    kib = 1024
    assert lookup(ENTRIES, 128, "sm8x", False, False)["smem_bytes"] == 48 * kib  # '128 x 32 (48 KB smem)'
    assert (
        lookup(ENTRIES, 256, "sm80", False, False)["smem_bytes"] == 128 * kib
    )  # 'A100 ... 128 x 64 (128KB smem)'
    assert (
        lookup(ENTRIES, 256, "sm90", False, False)["smem_bytes"] == 96 * kib
    )  # 'H100 ... 64 x 64 (96KB smem)'
    assert (
        lookup(TABLE["historical_entries"], 224, "sm80", False, False)["smem_bytes"] == 112 * kib
    )  # '112 KB'


def test_issue_examples():
    """d = 64 -> 128 x 128 with 4 warps; d = 128 -> 128 x 64 on the A100/H100 and 128 x 32 on sm86/89."""
    e = lookup(ENTRIES, 64, "sm90", False, False)
    assert (e["block_rows"], e["block_cols"], e["warps"]) == (128, 128, 4)
    assert (
        lookup(ENTRIES, 128, "sm80", False, False)["block_cols"],
        lookup(ENTRIES, 128, "sm8x", False, False)["block_cols"],
    ) == (64, 32)


def test_dropout_changes_the_d64_and_d128_tiles_as_the_launch_template_says():
    """run_mha_fwd_hdim64: 128 x 128 without dropout, 128 x 64 with it; run_mha_fwd_hdim128 (not sm8x):
    128 x 64 without, 128 x 32 with (flash_fwd_launch_template.h, read by hand)."""
    from simlib.fa2_tile_rule import kernel_tiles

    assert kernel_tiles(64) == (128, 128) and kernel_tiles(64, dropout=True) == (128, 64)
    assert kernel_tiles(128, arch="sm80") == (128, 64) and kernel_tiles(128, arch="sm80", dropout=True) == (
        128,
        32,
    )
    for head_dim in (64, 128):
        for arch in ("sm80", "sm8x", "sm90"):
            for causal in (False, True):
                e = lookup(ENTRIES, head_dim, arch, True, causal)
                assert kernel_tiles(head_dim, arch, causal, dropout=True) == (
                    e["block_rows"],
                    e["block_cols"],
                )


def test_fa2_torch_takes_its_forward_tiles_from_the_table():
    from simlib import Workload, count

    w = Workload(1024, 64, batch=2, heads=2)
    with_dropout, without = count("fa2_torch", w, dropout=True), count("fa2_torch", w, dropout=False)
    assert (with_dropout.block_rows, with_dropout.block_cols) == (128, 64)
    assert (without.block_rows, without.block_cols) == (128, 128)


def test_fa2_schedule_takes_the_dropout_entry_and_its_traffic_does_not_change():
    # flash_fwd_launch_template.h (d = 64, sm90): 128×128 without dropout, 128×64 with it. The K/V
    # re-reads depend on Br only (Tr = N/Br query blocks each read all of K and V), so HBM is unchanged:
    # reads N·d·(1 + 2N/Br) = 4096·64·(1 + 64) elements.
    from simlib import Workload, count

    w = Workload(4096, 64)
    plain, with_dropout = count("fa2", w), count("fa2", w, dropout=True)
    assert (plain.mapping.block_rows, plain.mapping.block_cols) == (128, 128)
    assert (with_dropout.mapping.block_rows, with_dropout.mapping.block_cols) == (128, 64)
    assert (
        with_dropout.mapping.as_dict()["dropout"] is True and "with dropout" in with_dropout.mapping.summary()
    )
    assert with_dropout.traffic.elements("HBM", "read") == 4096 * 64 * (1 + 2 * 4096 // 128)
    for op in ("read", "write"):
        assert with_dropout.traffic.elements("HBM", op) == plain.traffic.elements("HBM", op)
