"""The readers refuse damaged measurements (issue 26): each case here, read through the same function a
lecture uses, raises `MeasurementFileError` naming the file. Before, a header-only CSV gave an empty
result, a file cut at 60 % silently dropped rows, NaN, 0, negative and infinite times passed through
(an infinite speed-up), an empty file or a missing key gave a bare pandas/KeyError message without the
file's name, and no reader checked the sidecar's sha256.
"""

import hashlib
import json
import shutil
from pathlib import Path

import pytest

from evidence import energy_check, figure2, readers
from measurements import schemas
from measurements.provenance import csv_text, write_measurement
from measurements.read import MeasurementFileError, read_rows

CURRENT = Path(__file__).resolve().parent.parent / "data" / "measurements" / "current"
SIDE = "tc_side_by_side_h200.csv"
TC_ROW = "fa2_tc,w4_bc64 (default),bf16,1,16,4096,64,False,{ms},1,1,3,1,1,1,0,0,True,first,,1,\n"


def side_by_side(folder, times, name=SIDE):
    """A side-by-side CSV in the writer's columns, one fa2_tc row per time, no sidecar."""
    path = folder / name
    path.write_text(
        ",".join(schemas.SIDE_BY_SIDE.columns) + "\n" + "".join(TC_ROW.format(ms=t) for t in times)
    )
    return path


def copy_with_sidecar(name, folder):
    for suffix in ("", ".provenance.json"):
        shutil.copy(CURRENT / f"{name}{suffix}", folder / f"{name}{suffix}")
    return folder / name


@pytest.mark.parametrize("time", ["nan", "0", "-1.5", "inf", "-inf", "fast"])
def test_a_time_that_is_not_a_finite_positive_number_is_refused(tmp_path, time):
    path = side_by_side(tmp_path, ["0.5", time])
    with pytest.raises(MeasurementFileError, match=rf"{SIDE}, line 3: median_ms = '{time}'"):
        readers.tc_times(path)


def test_an_untimed_row_stays_allowed(tmp_path):
    path = side_by_side(tmp_path, ["0.5", ""])  # out of memory, past the budget: no time, not a bad one
    assert readers.tc_times(path)["time_ms"].tolist() == [0.5]


def test_a_header_only_file_is_refused(tmp_path):
    path = side_by_side(tmp_path, [])
    with pytest.raises(MeasurementFileError, match=f"{SIDE}: a header and no rows"):
        readers.tc_times(path)


def test_an_empty_file_names_itself(tmp_path):
    path = tmp_path / SIDE
    path.write_text("")
    with pytest.raises(MeasurementFileError, match=f"{SIDE}: empty file"):
        readers.tc_times(path)


def test_a_file_cut_at_60_percent_is_refused_by_its_sidecar(tmp_path):
    path = copy_with_sidecar(SIDE, tmp_path)
    data = path.read_bytes()
    path.write_bytes(data[: int(0.6 * len(data))])
    with pytest.raises(MeasurementFileError, match=f"{SIDE}: sha256 differs from its sidecar"):
        readers.tc_times(path)


def test_a_file_cut_mid_row_is_refused_without_a_sidecar(tmp_path):
    path = side_by_side(tmp_path, ["0.5", "0.6"])
    text = path.read_text()
    path.write_text(text[: text.rindex(",True,")])
    with pytest.raises(MeasurementFileError, match=f"{SIDE}, line 3: .* fields, the header has"):
        readers.tc_times(path)


def test_a_file_cut_at_a_row_boundary_is_refused_by_the_row_count(tmp_path):
    """The writer records the rows (and sha256); cut at a row's end and the sidecar edited to the new
    hash (as a careless copy would), the row count still tells."""
    rows = [
        dict(zip(schemas.SIDE_BY_SIDE.columns, TC_ROW.format(ms=t).rstrip("\n").split(",")))
        for t in (1, 2, 3)
    ]
    path = tmp_path / SIDE
    write_measurement(str(path), csv_text(rows, list(schemas.SIDE_BY_SIDE.columns)), {"run_id": "r"})
    side = tmp_path / f"{SIDE}.provenance.json"
    record = json.loads(side.read_text())
    assert record["rows"] == 3
    cut = "".join(path.read_text().splitlines(keepends=True)[:3])
    path.write_text(cut)
    record.update(sha256=hashlib.sha256(cut.encode()).hexdigest(), bytes=len(cut.encode()))
    side.write_text(json.dumps(record))
    with pytest.raises(MeasurementFileError, match=f"{SIDE}: 2 rows, its sidecar says 3"):
        readers.tc_times(path)


def test_a_file_changed_after_its_run_is_refused(tmp_path):
    path = copy_with_sidecar("energy_attention_h200.csv", tmp_path)
    path.write_text(path.read_text().replace(",ok,", ",ok ,", 1))
    with pytest.raises(MeasurementFileError, match="energy_attention_h200.csv: sha256 differs"):
        energy_check.read_attention(path)


def test_a_file_missing_its_writers_columns_names_them(tmp_path):
    path = tmp_path / "figure2_h200.csv"
    path.write_text("variant,dropout_p\nstandard,0.1\n")
    with pytest.raises(MeasurementFileError, match="figure2_h200.csv: missing column.s. batch, seq_len"):
        figure2.measured_h200(path)


@pytest.mark.parametrize(
    "text,needle",
    [
        ("", "empty file"),
        ("[1, 2]", "a JSON list, not an object"),
        ('{"mma_bf16": {"tflops": 600}}', "no 'mma_fp16' in it"),
        ("{cut", "not JSON"),
    ],
)
def test_a_damaged_json_measurement_names_the_file(tmp_path, text, needle):
    path = tmp_path / "ceilings_h200.json"
    path.write_text(text)
    with pytest.raises(MeasurementFileError, match=f"ceilings_h200.json: {needle}"):
        readers.read_ceilings(path)


def test_a_cuda_context_without_its_summary_names_the_file(tmp_path):
    path = tmp_path / "cuda_context_h200.json"
    path.write_text(json.dumps({"gpu_name": "H200", "driver_version": "1"}))
    with pytest.raises(MeasurementFileError, match="cuda_context_h200.json: no 'summary' in it"):
        readers.read_cuda_context(path)


@pytest.mark.parametrize(
    "name,schema",
    [
        ("bench_h200.csv", schemas.BENCH),
        ("compare_h200.csv", schemas.HARNESS),
        ("compare_h200_fast.csv", schemas.HARNESS),
        ("tc_bench_h200.csv", schemas.SIDE_BY_SIDE),
        (SIDE, schemas.SIDE_BY_SIDE),
        ("tc_side_by_side_h200_causal.csv", schemas.SIDE_BY_SIDE),
        ("tc_side_by_side_h200_cupy.csv", schemas.SIDE_BY_SIDE),
        ("fa2_tc_speed.csv", schemas.FA2_TC_SPEED),
        ("fa3_tc_speed.csv", schemas.FA2_TC_SPEED),
        ("profile_h200.csv", schemas.PROFILE),
        ("profile_h200_tc.csv", schemas.PROFILE),
        ("model_vs_ncu_h200.csv", schemas.MODEL_VS_NCU),
        ("model_vs_ncu_h200_tc.csv", schemas.MODEL_VS_NCU),
        ("profile_h200_fa3.csv", schemas.PROFILE),
        ("model_vs_ncu_h200_fa3.csv", schemas.MODEL_VS_NCU),
        ("figure2_h200.csv", schemas.FIGURE2),
        ("figure2_h200_kernels.csv", schemas.FIGURE2_KERNELS),
        ("energy_attention_h200.csv", schemas.ENERGY_ATTENTION),
        ("energy_calibration_h200.csv", schemas.ENERGY_CALIBRATION),
        ("eager16_h200.csv", schemas.EAGER16),
        ("eager16_energy_h200.csv", schemas.EAGER16_ENERGY),
        ("decode_side_by_side_h200.csv", schemas.DECODE_SIDE_BY_SIDE),
        ("decode_side_by_side_h200_repeat.csv", schemas.DECODE_SIDE_BY_SIDE),
    ],
)
def test_every_committed_file_passes_its_schema(name, schema):
    assert read_rows(CURRENT / name, schema)


def test_the_writers_write_their_schemas_columns():
    from evidence import model_vs_ncu
    from gpu_kernels.measure import decode_side_by_side, harness, ncu_profile, side_by_side

    assert harness.FIELDS == list(schemas.HARNESS.columns)
    assert ncu_profile.FIELDS == list(schemas.PROFILE.columns)
    assert side_by_side.FIELDS == list(schemas.SIDE_BY_SIDE.columns)
    assert decode_side_by_side.DECODE_FIELDS == list(schemas.DECODE_SIDE_BY_SIDE.columns)
    assert model_vs_ncu.COLUMNS == schemas.MODEL_VS_NCU.columns


def test_the_models_own_reads_refuse_a_cut_calibration(tmp_path):
    """Issue 26 item 2, the files simlib reads itself: the energy calibration cut at a row boundary (its
    sha256 and row count then differ from the sidecar's) is refused naming the file, not averaged."""
    import shutil

    from simlib.energy import MEASUREMENTS, read_calibration
    from simlib.measured_files import DamagedMeasurement

    src = MEASUREMENTS / "energy_calibration_h200.csv"
    path = tmp_path / src.name
    shutil.copy(src, path)
    shutil.copy(str(src) + ".provenance.json", str(path) + ".provenance.json")
    whole = read_calibration(path)
    lines = path.read_text().splitlines(keepends=True)
    assert len(whole) == len(lines) - 1  # the copy reads as the original does
    path.write_text("".join(lines[:-1]))  # cut after a whole row
    with pytest.raises(DamagedMeasurement, match=src.name):
        read_calibration(path)


def test_fa3_tc_speed_pairs_each_default_build_with_the_baselines_of_its_run():
    """readers.fa3_tc_speed against the committed file read with the csv module: per (causal, d, N) the
    default fa3_tc build's median over torch flash's and cuDNN's of the same run."""
    import csv

    from evidence import readers

    with open(CURRENT / "fa3_tc_speed.csv", newline="") as f:
        rows = [r for r in csv.DictReader(f) if r["ok"] == "True"]
    ms = {}
    for r in rows:
        if r["kernel"] in ("fa2_tc", "fa3_tc") and not r["config"].startswith("default"):
            continue
        ms[(r["kernel"], r["causal"] == "True", int(r["head_dim"]), int(r["seq_len"]))] = float(
            r["median_ms"]
        )
    table = readers.fa3_tc_speed()
    assert len(table) == sum(1 for k in ms if k[0] == "fa3_tc") > 0
    for t in table.itertuples(index=False):
        key = (bool(t.causal), int(t.head_dim), int(t.seq_len))
        fa3, flash, cudnn = (ms[(k, *key)] for k in ("fa3_tc", "torch_flash", "torch_cudnn"))
        assert abs(t[table.columns.get_loc("fa3_tc / flash")] - fa3 / flash) < 1e-12
        assert abs(t[table.columns.get_loc("fa3_tc / cuDNN")] - fa3 / cudnn) < 1e-12
