"""Reading the L2 probes' and the tiled kernel's ncu CSVs (evidence.l2_evidence), on small
CSVs written here with numbers chosen by hand."""

import pytest

from evidence import l2_evidence as E
from simlib import load_preset

H200 = load_preset("h200")
HEADER = '"ID","Process ID","Kernel Name","Metric Name","Metric Unit","Metric Value"\n'


def ncu_csv(tmp_path, rows):
    lines = ["==PROF== Connected to process 1\n", HEADER]
    for launch, metrics in enumerate(rows):
        lines += [f'"{launch}","1","k","{name}","x","{value:,}"\n' for name, value in metrics.items()]
    path = tmp_path / "ncu.csv"
    path.write_text("".join(lines))
    return path


def test_probe_misses_by_hand(tmp_path):
    mib = 2**20
    # 8 passes over F: F compulsory, then 7 re-reads. 8 MiB: nothing more (0 %); 64 MiB: half of
    # the 7 re-reads again (3.5 F more, 50 %)
    path = ncu_csv(
        tmp_path,
        [
            {
                "dram__bytes_read.sum": 8 * mib,
                "lts__t_sectors_op_read.sum": 1000,
                "lts__t_sectors_srcunit_ltcfabric.sum": 125,
            },
            {
                "dram__bytes_read.sum": int(64 * mib * 4.5),
                "lts__t_sectors_op_read.sum": 1000,
                "lts__t_sectors_srcunit_ltcfabric.sum": 500,
            },
        ],
    )
    table = E.probe_misses(path, (8, 64), passes=8)
    assert table["re-reads missed"].tolist() == [0.0, 0.5]
    assert table["over the fabric"].tolist() == [0.125, 0.5]
    with pytest.raises(ValueError, match="2 launches, 3 sizes"):
        E.probe_misses(path, (8, 64, 96), passes=8)


def test_tiled_rereads_by_hand(tmp_path):
    # N = 16384, d = 128, H = 1, default blocks 24 × 24: 683 blocks, 5 per SM (shared memory) ×
    # 132 SMs = 660 at a time -> two waves, and the 23 blocks of the second re-read the head's K and
    # V: 2 × 16384 × 128 × 4 B = 16,777,216 B. Compulsory Q, K, V: 3 × 8,388,608 B. Measured here:
    # compulsory + a quarter of the re-read -> 25 % missed.
    kv = 2 * 16384 * 128 * 4
    dram = 3 * 16384 * 128 * 4 + kv // 4
    path = ncu_csv(tmp_path, [{"dram__bytes_read.sum": dram, "launch__registers_per_thread": 254}])
    row = E.tiled_rereads(path, [(16384, 128, 1)], H200).iloc[0]
    assert row["waves"] == 2
    assert row["re-read K/V (MB)"] == kv / 1e6
    assert row["re-reads missed"] == 0.25
    # the model predicts an L2 hit (reuse distance < 60 MiB): DRAM = compulsory
    assert row["model (MB)"] == 3 * 16384 * 128 * 4 / 1e6
