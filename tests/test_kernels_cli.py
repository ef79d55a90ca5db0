"""`python -m gpu_kernels` against hostile use: output faults, interrupts, and the provenance writer.

Every case ends in one line on stderr and a non-zero exit, never a traceback; every file written has
its sidecar (run_id, sha256 of the bytes), mode 0644, and no temporary file is left behind.
"""

import hashlib
import json
import os
import stat
import subprocess
import sys

import pytest
from kernel_helpers import REPO

from gpu_kernels import cli, commands
from measurements import provenance as P


def one_line(text):
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def test_write_measurement_pairs_file_and_sidecar(tmp_path):
    path = str(tmp_path / "bench_x.csv")
    P.set_run_id("run-test-1")
    P.write_measurement(path, P.csv_text([{"a": 1, "b": 2}], ["a", "b"]), {"what": "test"})
    side = json.loads(open(path + ".provenance.json").read())
    assert open(path).read() == "a,b\n1,2\n"
    assert side["run_id"] == "run-test-1" and side["what"] == "test"
    assert side["sha256"] == hashlib.sha256(open(path, "rb").read()).hexdigest()
    for name in os.listdir(tmp_path):
        assert stat.S_IMODE(os.stat(tmp_path / name).st_mode) == 0o644
    assert sorted(os.listdir(tmp_path)) == ["bench_x.csv", "bench_x.csv.provenance.json"]


def test_failed_write_leaves_no_temporary_file(tmp_path):
    (tmp_path / "taken").mkdir()  # a directory where the file should go: the rename fails
    with pytest.raises(OSError):
        P.write_measurement(str(tmp_path / "taken"), "x\n", {"what": "test"})
    assert sorted(os.listdir(tmp_path)) == ["taken"]


def test_csv_text_refuses_unknown_fields():
    with pytest.raises(ValueError):
        P.csv_text([{"a": 1, "c": 3}], ["a", "b"])


@pytest.mark.parametrize(
    "folder,message", [("", "empty"), ("README.md", "is a file"), ("README.md/sub", "under a file")]
)
def test_output_folder_checked_before_work(folder, message):
    with pytest.raises(ValueError, match=message):
        P.check_output_dir(os.path.join(REPO, folder) if folder else folder)


def test_output_folder_is_not_created_by_the_check(tmp_path):
    assert P.check_output_dir(str(tmp_path / "a" / "b")) and not (tmp_path / "a").exists()


@pytest.mark.parametrize(
    "exc,status,words",
    [
        (KeyboardInterrupt, 130, "interrupted"),
        (MemoryError, 1, "out of host memory"),
        (OSError(28, "No space left on device"), 1, "No space left"),
    ],
)
def test_interrupts_and_faults_are_one_line(monkeypatch, capsys, exc, status, words):
    def fail(args):
        raise exc

    monkeypatch.setitem(cli.COMMANDS, "run", fail)
    assert cli.main(["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "4", "--simulate"]) == status
    err = capsys.readouterr().err
    assert words in one_line(err)


def test_stdout_to_dev_full(tmp_path):
    """`> /dev/full`: the report line cannot be written; one line on stderr, exit 1, file complete."""
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full here")
    out = tmp_path / "mvn.csv"
    env = {**os.environ, "PYTHONPATH": REPO + os.pathsep + os.environ.get("PYTHONPATH", "")}
    with open("/dev/full", "w") as full:
        p = subprocess.run(
            [sys.executable, "-m", "gpu_kernels", "model-vs-ncu", "--out", str(out)],
            stdout=full,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env=env,
            timeout=120,
        )
    assert p.returncode == 1
    assert "No space left" in one_line(p.stderr)
    assert out.is_file() and (tmp_path / "mvn.csv.provenance.json").is_file()


def test_run_id_must_be_a_folder_name():
    for bad in ("", "../x", ".hidden", "a b"):
        with pytest.raises(ValueError, match="--run-id"):
            P.set_run_id(bad)


# --- every numeric and list flag of every subcommand, with arbitrary text ---------------------------

from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

FLAGS = [
    (["run", "--kernel", "tiled", "--head-dim", "16"], "--seq-len"),
    (["run", "--kernel", "tiled", "--seq-len", "8"], "--head-dim"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--batch"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--heads"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--kv-heads"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--query-len"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--block-rows"),
    (["run", "--kernel", "naive", "--seq-len", "8", "--head-dim", "16"], "--matmul-tile"),
    (["run", "--kernel", "naive", "--seq-len", "8", "--head-dim", "16"], "--softmax-threads"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--seed"),
    (["run", "--kernel", "tiled", "--seq-len", "8", "--head-dim", "16"], "--logit-scale"),
    (["bench", "--out", "build"], "--seq-lens"),
    (["compare", "--out", "build"], "--head-dims"),
    (["compare", "--out", "build"], "--reps"),
    (["bench", "--out", "build"], "--budget-s"),
    (["compare", "--out", "build"], "--variants"),
    (["compare", "--out", "build"], "--configs"),
    (["tune", "--out", "build"], "--seq-lens"),
    (["profile", "--out", "build"], "--kernels"),
    (["profile", "--out", "build"], "--timeout-s"),
    (["ncu", "--out", "build"], "--specs"),
    (["asm"], "--head-dims"),
    (["bench"], "--out"),
    (["bench", "--out", "build"], "--run-id"),
]


def without_gpu(monkeypatch):
    """Every command that would need a GPU stops with the no-GPU line (as on a machine without one)."""

    def no_gpu(*args, **kwargs):
        raise cli.NoGPU("no CUDA GPU found")

    monkeypatch.setattr(commands, "require_gpu", no_gpu)
    monkeypatch.setattr(commands, "select_backend", no_gpu)


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=st.sampled_from(FLAGS), text=st.text(max_size=30))
def test_fuzz_flags_one_line_exit_2(monkeypatch, capsys, case, text):
    """Whatever the text: exit 2 with one stderr line and nothing on stdout (a refusal, or the
    no-GPU line for input that is valid), never a traceback."""
    without_gpu(monkeypatch)
    base, flag = case
    assert cli.main([*base, f"{flag}={text}"]) == 2
    out = capsys.readouterr()
    assert out.out == ""
    one_line(out.err)


@pytest.mark.parametrize("case", FLAGS, ids=lambda c: f"{c[0][0]} {c[1]}")
def test_a_lone_double_dash_as_a_value_is_refused_by_name(monkeypatch, capsys, case):
    """`--kernel=--`: argparse drops the "--" and would pass an empty list, neither converted nor
    checked against the choices; the no-GPU line would hide it, so it must be refused by name."""
    without_gpu(monkeypatch)
    base, flag = case
    assert cli.main([*base, f"{flag}=--"]) == 2
    out = capsys.readouterr()
    assert out.out == "" and f"argument {flag}: expected a value, got '--'" in one_line(out.err)


# --- GPU test runs and device runs that must not look green -----------------------------------------

GPU_ONLY_TEST = """
import pytest

@pytest.mark.gpu
@pytest.mark.skip(reason="skipped on purpose")
def test_needs_gpu():
    pass
"""


def _pytest_gpu(tmp_path, fake_gpu):
    """`FLASHIO_GPU=1 pytest -m gpu` on one skipped GPU test, with the project's conftest."""
    conftest = open(os.path.join(REPO, "tests", "conftest.py")).read()
    if fake_gpu:  # pretend numba found a GPU
        conftest = "import gpu_kernels.device as _d\n_d.gpu_available = lambda: True\n" + conftest
    (tmp_path / "conftest.py").write_text(conftest)
    (tmp_path / "test_gpu_only.py").write_text(GPU_ONLY_TEST)
    env = {**os.environ, "FLASHIO_GPU": "1", "PYTHONPATH": REPO}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-p",
            "no:xdist",
            "-m",
            "gpu",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        env=env,
        timeout=300,
    )


def test_gpu_run_that_skips_everything_fails(tmp_path):
    p = _pytest_gpu(tmp_path, fake_gpu=True)
    assert p.returncode == 1, p.stdout + p.stderr
    assert "none passed" in p.stderr


def test_gpu_run_without_a_gpu_stops_in_one_line(tmp_path):
    if (
        subprocess.run(
            [sys.executable, "-c", "from numba import cuda; print(cuda.is_available())"],
            capture_output=True,
            text=True,
            env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
        ).stdout.strip()
        == "True"
    ):
        pytest.skip("a real GPU is present")
    p = _pytest_gpu(tmp_path, fake_gpu=False)
    assert p.returncode == 2
    assert "no usable CUDA GPU" in p.stdout + p.stderr and "AttributeError" not in p.stdout + p.stderr


def test_device_run_script_fails_when_a_stage_fails(tmp_path):
    """benchmarks/gpu_device_run.py: a failed stage (asm without a GPU exits 2) makes the script exit
    1, and its log is written with a sidecar like every other file."""
    if (
        subprocess.run(
            [sys.executable, "-c", "from numba import cuda; print(cuda.is_available())"],
            capture_output=True,
            text=True,
            env={**os.environ, "NUMBA_ENABLE_CUDASIM": "0"},
        ).stdout.strip()
        == "True"
    ):
        pytest.skip("a real GPU is present: asm would pass")
    env = {**os.environ, "OUT": str(tmp_path), "PYTHONPATH": REPO, "FLASHIO_RUN_ID": "test-device-run"}
    env.pop("NUMBA_ENABLE_CUDASIM", None)
    p = subprocess.run(
        [sys.executable, os.path.join(REPO, "benchmarks", "gpu_device_run.py"), "--stages", "asm"],
        capture_output=True,
        text=True,
        cwd=REPO,
        env=env,
        timeout=300,
    )
    assert p.returncode == 1, p.stdout + p.stderr
    assert "FAILED: asm (rc=2)" in p.stdout
    side = json.loads((tmp_path / "log.txt.provenance.json").read_text())
    assert side["run_id"] == "test-device-run" and side["failed"] == ["asm (rc=2)"]


def test_attach_gives_a_file_another_program_wrote_its_sidecar(tmp_path):
    """The benchmarks' ncu runs redirect ncu's CSV into a file; `python -m measurements.provenance`
    then writes its sidecar with the checksum of those bytes (a missing file: one line, exit 2)."""
    f = tmp_path / "ncu.csv"
    f.write_text('"ID","Metric Name"\n')
    env = {**os.environ, "PYTHONPATH": REPO, "FLASHIO_RUN_ID": "run-attach"}
    p = subprocess.run(
        [sys.executable, "-m", "measurements.provenance", str(f), "--what", "ncu of x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 0, p.stderr
    side = json.loads((tmp_path / "ncu.csv.provenance.json").read_text())
    assert (side["run_id"], side["what"]) == ("run-attach", "ncu of x")
    assert side["sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()
    p = subprocess.run(
        [sys.executable, "-m", "measurements.provenance", str(tmp_path / "none.csv"), "--what", "x"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
    )
    assert p.returncode == 2 and "not a file" in one_line(p.stderr)
